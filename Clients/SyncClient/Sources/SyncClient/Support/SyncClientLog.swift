import Logging

/// The labels of the SDK's loggers (swift-log), one per subsystem, so an app or its support team keeps what it needs.
/// The SDK logs what happened and why, never a token, a password or an item's content: item ids, collections,
/// dates of sync, counts, HTTP statuses and error codes.
public enum SyncClientLog {
    /// Syncs: each one's end (date, counts, duration) or failure, limits read again.
    public static let sync = "syncapi.client.sync"
    /// Pushes: writes the server refused for good (moved to `failedOperations`), conflicts and how they were settled.
    public static let push = "syncapi.client.push"
    /// Live mode and the all-spaces stream: connections, drops and their backoff.
    public static let live = "syncapi.client.live"
    /// Sign-ins, sign-outs and sessions the server ended.
    public static let session = "syncapi.client.session"
    /// Media downloads and uploads that failed.
    public static let media = "syncapi.client.media"
    /// Every label, in this order.
    public static let all = [sync, push, live, session, media]
}

/// One client's loggers, made by its configuration's `makeLogger`.
struct ClientLoggers: Sendable {
    let sync: Logger
    let push: Logger
    let live: Logger
    let session: Logger
    let media: Logger

    init(_ make: (String) -> Logger) {
        sync = make(SyncClientLog.sync)
        push = make(SyncClientLog.push)
        live = make(SyncClientLog.live)
        session = make(SyncClientLog.session)
        media = make(SyncClientLog.media)
    }
}

extension Duration {
    /// Whole milliseconds, for a log line.
    var wholeMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
    /// Milliseconds to the microsecond (`"0.412"`), for a log line about a short step.
    var milliseconds: String {
        let micros = components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
        let fraction = String(micros % 1000)
        return "\(micros / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

extension SyncClientError {
    /// What a log line says of an error: its server code (or the SDK's kind) and its text.
    var logMetadata: Logger.Metadata {
        ["code": "\(logCode)", "error": "\(description)"]
    }

    /// The server's code, else the case's name.
    private var logCode: String {
        switch self {
        case .unavailable(_, let code, _), .server(_, let code, _), .throttled(let code, _): code.rawValue
        case .offline: "offline"
        case .notSignedIn: "not_signed_in"
        case .invalidCredentials: "invalid_credentials"
        case .unpushedWrites: "unpushed_writes"
        case .invalid: "invalid"
        case .spaceRemoved: "space_removed"
        case .idTokenRefused: "id_token_refused"
        case .local: "local"
        }
    }
}
