import Foundation

/// Why an SDK call failed, sorted by what the app can do about it.
public enum SyncClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer from the server (offline, refused, timed out): retry later; writes stay queued.
    case offline(String)
    /// The server is busy or throttling (429, 503, other 5xx): retry after `retryAfter` seconds when given.
    case unavailable(status: Int, code: String, retryAfter: Int?)
    /// The server refused the call (protocol §7): its status, stable `code` and detail.
    case server(status: Int, code: String, detail: String)
    /// Not signed in (or the token stopped working: logout elsewhere, password change, expiry).
    case notSignedIn
    /// A call the SDK refuses before any request (a missing parent, a read-only collection, bad JSON).
    case invalid(String)

    public var description: String {
        switch self {
        case .offline(let why): return "offline: \(why)"
        case .unavailable(let status, let code, let retryAfter):
            return "\(status) \(code): the server is busy" + (retryAfter.map { ", retry after \($0) s" } ?? "")
        case .server(let status, let code, let detail): return "\(status) \(code): \(detail)"
        case .notSignedIn: return "not signed in"
        case .invalid(let why): return why
        }
    }

    /// Worth retrying later (network, 429, 503), as opposed to a permanent refusal.
    public var isTransient: Bool {
        switch self {
        case .offline, .unavailable: return true
        default: return false
        }
    }

    /// The HTTP status of a server answer (nil for errors without one).
    public var status: Int? {
        switch self {
        case .unavailable(let status, _, _), .server(let status, _, _): return status
        case .notSignedIn: return 401
        default: return nil
        }
    }

    /// The server's `Retry-After`, in seconds.
    var retryAfter: Int? {
        if case .unavailable(_, _, let seconds) = self { return seconds }
        return nil
    }

    /// The error an answer means, nil for a success: 401 is a lost session, 429 and 5xx are transient.
    static func from(status: Int, body: JSONValue?, retryAfter: String?) -> SyncClientError? {
        guard status >= 300 else { return nil }
        let code = body?["code"]?.stringValue ?? "http_\(status)"
        if status == 401 { return .notSignedIn }
        if status == 429 || status >= 500 {
            return .unavailable(status: status, code: code, retryAfter: retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) })
        }
        return .server(status: status, code: code, detail: body?["detail"]?.stringValue ?? "")
    }

    static func from(_ answer: HTTPAnswer) -> SyncClientError {
        from(status: answer.status, body: answer.json, retryAfter: answer.header("Retry-After"))
            ?? .server(status: answer.status, code: "unexpected_answer", detail: "unexpected answer \(answer.status)")
    }

    static func from(_ answer: SubResponse) -> SyncClientError {
        from(status: answer.status, body: answer.body, retryAfter: answer.header("Retry-After"))
            ?? .server(status: answer.status, code: "unexpected_answer", detail: "unexpected answer \(answer.status)")
    }
}
