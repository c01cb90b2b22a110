import Foundation

/// Why an SDK call failed, sorted by what the app can do about it.
public enum SyncClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer from the server (offline, refused, timed out): retry later; writes stay queued.
    case offline(String)
    /// The server is busy or throttling (429, 503, other 5xx): retry after `retryAfter` seconds when given.
    case unavailable(status: Int, code: ServerErrorCode, retryAfter: Int?)
    /// The server refused the call (protocol §7): its status, stable `code` and detail.
    case server(status: Int, code: ServerErrorCode, detail: String)
    /// Not signed in (or the token stopped working: logout elsewhere, password change, expiry).
    case notSignedIn
    /// A sign-in or password check with a wrong username or password (401 `invalid_credentials`): not a lost session.
    case invalidCredentials
    /// The server asks this client to slow down (429: failed logins, too many open downloads or streams); retry
    /// after `retryAfter` seconds. Sign-in never retries it by itself.
    case throttled(code: ServerErrorCode, retryAfter: Int?)
    /// Writes that have not reached the server and that the call would lose: a `logOut()` that could not push them
    /// (offline, refused, the session lost), or a sign-in as another account while they wait. Retry when online (or
    /// sign in as the account that made them), or pass `discardingPendingWrites: true` to drop them.
    case unpushedWrites([PendingOperation])
    /// A call the SDK refuses before any request (a missing parent, a read-only collection, bad JSON).
    case invalid(String)
    /// The client's space (`configuration.space`) is no longer the account's: it was removed from it, or the space is
    /// gone. The replica's data of the space was erased; open the client of another space.
    case spaceRemoved(String)
    /// `signIn(idToken:)`: the server refused the ID token (401), with the check that failed (nil when its answer
    /// names none the SDK knows) and the server's detail.
    case idTokenRefused(IdentityTokenRefusal?, detail: String)
    /// A failure of the device rather than of the server or the network: the replica file, the disk.
    case local(String)

    public var description: String {
        switch self {
        case .offline(let why): return "offline: \(why)"
        case .unavailable(let status, let code, let retryAfter):
            return "\(status) \(code): the server is busy" + (retryAfter.map { ", retry after \($0) s" } ?? "")
        case .server(let status, let code, let detail): return "\(status) \(code): \(detail)"
        case .notSignedIn: return "not signed in"
        case .invalidCredentials: return "wrong username or password"
        case .throttled(let code, let retryAfter): return "429 \(code): too many attempts" + (retryAfter.map { ", retry after \($0) s" } ?? "")
        case .unpushedWrites(let writes):
            return "\(writes.count) writes have not reached the server: retry when online, or discard them (discardingPendingWrites)"
        case .invalid(let why): return why
        case .spaceRemoved(let space): return "no longer a member of space \(space): its local data was erased"
        case .idTokenRefused(_, let detail): return "the ID token was refused: \(detail)"
        case .local(let why): return "on this device: \(why)"
        }
    }

    /// Any error as the status shows it: a `SyncClientError` as it is, anything else (the replica, the disk) `.local`.
    static func wrapping(_ error: any Error) -> SyncClientError {
        error as? SyncClientError ?? .local("\(error)")
    }

    /// Worth retrying later (network, 429, 503), as opposed to a permanent refusal.
    public var isTransient: Bool {
        switch self {
        case .offline, .unavailable, .throttled: return true
        default: return false
        }
    }

    /// The HTTP status of a server answer (nil for errors without one).
    public var status: Int? {
        switch self {
        case .unavailable(let status, _, _), .server(let status, _, _): return status
        case .throttled: return 429
        case .notSignedIn, .invalidCredentials, .idTokenRefused: return 401
        default: return nil
        }
    }

    /// The server's `Retry-After`, in seconds.
    var retryAfter: Int? {
        switch self {
        case .unavailable(_, _, let seconds), .throttled(_, let seconds): return seconds
        default: return nil
        }
    }

    /// The error an answer means, nil for a success: 401 is a lost session (or wrong credentials, by its code), 429
    /// throttling, 5xx a busy server; the last two are transient.
    static func from(status: Int, body: JSONValue?, retryAfter: String?) -> SyncClientError? {
        guard status >= 300 else { return nil }
        let code = body?["code"]?.stringValue.map(ServerErrorCode.init(rawValue:)) ?? .http(status)
        let seconds = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        if status == 401 { return code == .invalidCredentials ? .invalidCredentials : .notSignedIn }
        if status == 429 { return .throttled(code: code, retryAfter: seconds) }
        if status >= 500 { return .unavailable(status: status, code: code, retryAfter: seconds) }
        return .server(status: status, code: code, detail: body?["detail"]?.stringValue ?? "")
    }

    static func from(_ answer: HTTPAnswer) -> SyncClientError {
        from(status: answer.status, body: answer.json, retryAfter: answer.header("Retry-After"))
            ?? .server(status: answer.status, code: .unexpectedAnswer, detail: "unexpected answer \(answer.status)")
    }

    static func from(_ answer: SubResponse) -> SyncClientError {
        from(status: answer.status, body: answer.body, retryAfter: answer.header("Retry-After"))
            ?? .server(status: answer.status, code: .unexpectedAnswer, detail: "unexpected answer \(answer.status)")
    }
}

/// The codes the SDK gives errors that carry no server code.
extension ServerErrorCode {
    /// An answer with no `code` (a proxy's, or a non-JSON body): `http_<status>`.
    public static func http(_ status: Int) -> ServerErrorCode { ServerErrorCode(rawValue: "http_\(status)") }
    /// An answer the SDK did not expect (a status a call never answers).
    public static let unexpectedAnswer = ServerErrorCode(rawValue: "unexpected_answer")
    /// An answer whose body does not decode.
    public static let invalidAnswer = ServerErrorCode(rawValue: "invalid_answer")
    /// Downloaded media whose bytes do not match their URL's digest.
    public static let mediaCorrupt = ServerErrorCode(rawValue: "media_corrupt")
    /// An answer larger than the SDK reads (`SyncClientConfiguration.answerMaxBytes`, or a server event over the event
    /// parser's limit): it was not read further, so that a broken or hostile server cannot fill the device's memory.
    public static let answerTooLarge = ServerErrorCode(rawValue: "answer_too_large")
}

extension SyncClientError {
    /// An answer (or one value of a streamed answer) over `limit` bytes: `answer_too_large`, never retried by itself.
    static func answerTooLarge(status: Int, limit: Int, what: String = "the answer") -> SyncClientError {
        .server(status: status, code: .answerTooLarge, detail: "\(what) is larger than \(limit) bytes")
    }

    /// An answer over the SDK's limit (`answerTooLarge`).
    var isAnswerTooLarge: Bool {
        guard case .server(_, let code, _) = self else { return false }
        return code == .answerTooLarge
    }

    /// The server refused a group for its size: 413 (the body is over `bodyMaxBytes`, whatever the code: a proxy's
    /// answer may have none) or 400 `invalid_group` (more calls than `groupMaxRequests`). Its limits are read again.
    var refusesGroupSize: Bool {
        guard case .server(let status, let code, _) = self else { return false }
        return status == 413 || (status == 400 && code == .invalidGroup)
    }
}
