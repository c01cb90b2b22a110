/// A failure the client can act on, with the stable `code` of protocol §7.
///
/// The engine and the stores throw only this (or let an unexpected error escape, which the HTTP layer answers
/// as a logged 500). The HTTP layer gives each code its status and title and renders it as
/// `application/problem+json`; nothing below it knows HTTP.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable machine-readable codes of protocol §7, matched by callers instead of text.
    public enum Code: String, Sendable, CaseIterable {
        case invalidParameter = "invalid_parameter"
        case invalidDate = "invalid_date"
        case invalidField = "invalid_field"
        case unknownField = "unknown_field"
        case invalidID = "invalid_id"
        case invalidJSON = "invalid_json"
        case notFound = "not_found"
        case unauthorized
        case invalidCredentials = "invalid_credentials"
        case usernameTaken = "username_taken"
        case signupDisabled = "signup_disabled"
        case preconditionFailed = "precondition_failed"
        case typeImmutable = "type_immutable"
        case payloadTooLarge = "payload_too_large"
        case methodNotAllowed = "method_not_allowed"
        case invalidGroup = "invalid_group"
        case invalidSubrequest = "invalid_subrequest"
        case tooManyRequests = "too_many_requests"
        case unavailable
        case unsupportedMediaType = "unsupported_media_type"
        case forbidden
        case quotaExceeded = "quota_exceeded"
        /// A change that would leave a space without an owner (protocol §15).
        case lastOwner = "last_owner"
        case requestTimeout = "request_timeout"
        /// An unexpected failure, logged; never the answer to bad input.
        case internalError = "internal"
    }

    /// Stable machine-readable code, e.g. `invalid_field`.
    public let code: Code
    /// Human-readable explanation of this occurrence.
    public let detail: String
    /// The offending field or parameter, when there is one.
    public let field: String?
    /// Seconds to wait before retrying (429, 503).
    public let retryAfter: Int?
    /// The methods the path takes (405, for the `Allow` header).
    public let allow: [String]?

    public init(_ code: Code, detail: String, field: String? = nil, retryAfter: Int? = nil, allow: [String]? = nil) {
        self.code = code
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
        self.allow = allow
    }

    public var description: String { "\(code.rawValue): \(detail)" }

    public static func invalidField(_ field: String, _ detail: String) -> SyncError {
        SyncError(.invalidField, detail: detail, field: field)
    }
    public static func unknownField(_ field: String) -> SyncError {
        SyncError(.unknownField, detail: "Unknown field \"\(field)\".", field: field)
    }
    public static func invalidParameter(_ name: String, _ detail: String) -> SyncError {
        SyncError(.invalidParameter, detail: detail, field: name)
    }
    public static func invalidDate(_ detail: String) -> SyncError {
        SyncError(.invalidDate, detail: detail, field: "date")
    }
    public static func invalidID(_ detail: String) -> SyncError {
        SyncError(.invalidID, detail: detail, field: "id")
    }
    public static func invalidJSON(_ detail: String) -> SyncError {
        SyncError(.invalidJSON, detail: detail)
    }
    public static func notFound(_ detail: String = "No such resource.") -> SyncError {
        SyncError(.notFound, detail: detail)
    }
    public static let unauthorized = SyncError(.unauthorized, detail: "A valid bearer token is required.")
    public static let invalidCredentials = SyncError(.invalidCredentials, detail: "Unknown username or wrong password.")
    public static let usernameTaken = SyncError(.usernameTaken, detail: "This username is already taken.", field: "username")
    public static let signupDisabled = SyncError(.signupDisabled, detail: "Signup is turned off on this server.")
    public static let preconditionFailed = SyncError(.preconditionFailed, detail: "The item does not match the request's precondition.")
    /// A live item's filter field cannot change (protocol §2, §12). The detail reads as the golden answers of the
    /// default model have it ("A wall post's type cannot change.") for any collection and field.
    public static func typeImmutable(collection: String, field: String) -> SyncError {
        SyncError(.typeImmutable, detail: "A \(collection) post's \(field) cannot change.", field: field)
    }
    public static func payloadTooLarge(limit: Int) -> SyncError {
        SyncError(.payloadTooLarge, detail: "The body is larger than \(limit) bytes.")
    }
    public static func methodNotAllowed(allow: [String]) -> SyncError {
        SyncError(.methodNotAllowed, detail: "This path takes \(allow.joined(separator: ", ")) only.", allow: allow)
    }
    public static func tooManyRequests(retryAfter: Int, detail: String = "Too many failed attempts; retry later.") -> SyncError {
        SyncError(.tooManyRequests, detail: detail, retryAfter: retryAfter)
    }
    public static func forbidden(_ detail: String) -> SyncError {
        SyncError(.forbidden, detail: detail)
    }
    public static func quotaExceeded(_ detail: String, field: String? = nil) -> SyncError {
        SyncError(.quotaExceeded, detail: detail, field: field)
    }
    public static let lastOwner = SyncError(
        .lastOwner, detail: "A space keeps at least one owner: make another member an owner first.")
    public static func unsupportedMediaType(_ detail: String) -> SyncError {
        SyncError(.unsupportedMediaType, detail: detail, field: "Content-Type")
    }
    /// A write sub-request of a group that would have started past the group's time limit (protocol §6).
    public static let groupTimeLimit = SyncError(
        .unavailable, detail: "The group ran past its time limit before this write started; send it again.",
        retryAfter: 1)
    public static let unavailable = SyncError(.unavailable, detail: "The database is unreachable; retry shortly.", retryAfter: 5)
}
