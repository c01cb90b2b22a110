/// A failure the client can act on, with the stable `code` of protocol §7.
///
/// The engine and the stores throw only this (or let an unexpected error escape, which the HTTP layer answers
/// as a logged 500). The HTTP layer renders it as `application/problem+json`.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable machine-readable code, e.g. `invalid_field`.
    public let code: String
    /// HTTP status.
    public let status: Int
    /// Human-readable explanation of this occurrence.
    public let detail: String
    /// The offending field or parameter, when there is one.
    public let field: String?
    /// Seconds to wait before retrying (429, 503).
    public let retryAfter: Int?
    /// The methods the path takes (405, for the `Allow` header).
    public let allow: [String]?

    public init(code: String, status: Int, detail: String, field: String? = nil, retryAfter: Int? = nil, allow: [String]? = nil) {
        self.code = code
        self.status = status
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
        self.allow = allow
    }

    public var description: String { "\(status) \(code): \(detail)" }

    public static func invalidField(_ field: String, _ detail: String) -> SyncError {
        SyncError(code: "invalid_field", status: 400, detail: detail, field: field)
    }
    public static func unknownField(_ field: String) -> SyncError {
        SyncError(code: "unknown_field", status: 400, detail: "Unknown field \"\(field)\".", field: field)
    }
    public static func invalidParameter(_ name: String, _ detail: String) -> SyncError {
        SyncError(code: "invalid_parameter", status: 400, detail: detail, field: name)
    }
    public static func invalidDate(_ detail: String) -> SyncError {
        SyncError(code: "invalid_date", status: 400, detail: detail, field: "date")
    }
    public static func invalidID(_ detail: String) -> SyncError {
        SyncError(code: "invalid_id", status: 400, detail: detail, field: "id")
    }
    public static func invalidJSON(_ detail: String) -> SyncError {
        SyncError(code: "invalid_json", status: 400, detail: detail)
    }
    public static func notFound(_ detail: String = "No such resource.") -> SyncError {
        SyncError(code: "not_found", status: 404, detail: detail)
    }
    public static let unauthorized = SyncError(
        code: "unauthorized", status: 401, detail: "A valid bearer token is required.")
    public static let invalidCredentials = SyncError(
        code: "invalid_credentials", status: 401, detail: "Unknown username or wrong password.")
    public static let usernameTaken = SyncError(
        code: "username_taken", status: 409, detail: "This username is already taken.", field: "username")
    public static let signupDisabled = SyncError(
        code: "signup_disabled", status: 403, detail: "Signup is turned off on this server.")
    public static let preconditionFailed = SyncError(
        code: "precondition_failed", status: 412, detail: "The item does not match the request's precondition.")
    /// A live item's filter field cannot change (protocol §4, §12). The detail reads as the golden answers of the
    /// default model have it ("A wall post's type cannot change.") for any collection and field.
    public static func typeImmutable(collection: String, field: String) -> SyncError {
        SyncError(code: "type_immutable", status: 409, detail: "A \(collection) post's \(field) cannot change.", field: field)
    }
    public static func payloadTooLarge(limit: Int) -> SyncError {
        SyncError(code: "payload_too_large", status: 413, detail: "The body is larger than \(limit) bytes.")
    }
    public static func methodNotAllowed(allow: [String]) -> SyncError {
        SyncError(
            code: "method_not_allowed", status: 405, detail: "This path takes \(allow.joined(separator: ", ")) only.", allow: allow)
    }
    public static func tooManyRequests(retryAfter: Int, detail: String = "Too many failed attempts; retry later.") -> SyncError {
        SyncError(code: "too_many_requests", status: 429, detail: detail, retryAfter: retryAfter)
    }
    public static func forbidden(_ detail: String) -> SyncError {
        SyncError(code: "forbidden", status: 403, detail: detail)
    }
    public static func quotaExceeded(_ detail: String, field: String? = nil) -> SyncError {
        SyncError(code: "quota_exceeded", status: 403, detail: detail, field: field)
    }
    public static func unsupportedMediaType(_ detail: String) -> SyncError {
        SyncError(code: "unsupported_media_type", status: 415, detail: detail, field: "Content-Type")
    }
    /// A write sub-request of a group that would have started past the group's time limit (protocol §6).
    public static let groupTimeLimit = SyncError(
        code: "unavailable", status: 503, detail: "The group ran past its time limit before this write started; send it again.",
        retryAfter: 1)
    public static let unavailable = SyncError(
        code: "unavailable", status: 503, detail: "The database is unreachable; retry shortly.", retryAfter: 5)
}
