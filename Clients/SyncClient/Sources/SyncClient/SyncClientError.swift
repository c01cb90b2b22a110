/// Why an SDK call failed.
public enum SyncClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer from the server (offline, refused, timed out): the call can be retried later; writes stay queued.
    case offline(String)
    /// The server answered with a problem (protocol §7): its status, stable `code` and detail.
    case server(status: Int, code: String, detail: String)
    /// Not signed in (or the token stopped working: logout elsewhere, password change, expiry).
    case notSignedIn
    /// A call the SDK refuses before any request (an unknown collection, a missing parent, bad JSON).
    case invalid(String)

    public var description: String {
        switch self {
        case .offline(let why): return "offline: \(why)"
        case .server(let status, let code, let detail): return "\(status) \(code): \(detail)"
        case .notSignedIn: return "not signed in"
        case .invalid(let why): return why
        }
    }

    /// Worth retrying later (network, 429, 503), as opposed to a permanent refusal.
    public var isTransient: Bool {
        switch self {
        case .offline: return true
        case .server(let status, _, _): return status == 429 || status == 503 || status >= 500
        default: return false
        }
    }

    static func from(_ answer: HTTPAnswer) -> SyncClientError {
        if answer.status == 401 { return .notSignedIn }
        let json = answer.json
        return .server(
            status: answer.status, code: json?["code"]?.stringValue ?? "http_\(answer.status)",
            detail: json?["detail"]?.stringValue ?? "")
    }
}
