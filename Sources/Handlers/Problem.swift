import Hummingbird
import Logging
import NIOCore
import SyncAPI

/// An error as HTTP answers it: RFC 9457 `application/problem+json` with the stable `code` of protocol §7, at the
/// status its code has (`SyncError.Code.status`) unless the answer names another (a 416 for a range, the status of a
/// framework error).
struct Problem {
    let error: SyncError
    let status: HTTPResponse.Status

    init(_ error: SyncError, status: HTTPResponse.Status? = nil) {
        self.error = error
        self.status = status ?? error.code.status
    }

    /// The problem document.
    var json: [UInt8] {
        let code = error.code.rawValue
        var members: [(key: String, value: JSONValue)] = [
            ("type", .string("https://syncapi.dev/problems/\(code)")),
            ("title", .string(error.code.title)),
            ("status", .number(Double(status.code))),
            ("detail", .string(error.detail)),
            ("code", .string(code)),
        ]
        if let field = error.field { members.append(("field", .string(field))) }
        var writer = JSONWriter()
        writer.value(.object(members))
        return writer.bytes
    }

    /// The HTTP response.
    var response: Response {
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let allow = error.allow { headers[.allow] = allow.joined(separator: ", ") }
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}

extension SyncError {
    /// The HTTP response of this error, at its code's status.
    var response: Response { Problem(self).response }
}

extension SyncError.Code {
    /// The HTTP status of an error of this code.
    var status: HTTPResponse.Status {
        switch self {
        case .invalidParameter, .invalidDate, .invalidField, .unknownField, .invalidID, .invalidJSON, .invalidGroup, .invalidSubrequest:
            .badRequest
        case .notFound: .notFound
        case .unauthorized, .invalidCredentials: .unauthorized
        case .usernameTaken, .typeImmutable, .lastOwner: .conflict
        case .signupDisabled, .forbidden, .quotaExceeded: .forbidden
        case .preconditionFailed: .preconditionFailed
        case .payloadTooLarge: .contentTooLarge
        case .methodNotAllowed: .methodNotAllowed
        case .tooManyRequests: .tooManyRequests
        case .unavailable: .serviceUnavailable
        case .unsupportedMediaType: .unsupportedMediaType
        case .requestTimeout: .requestTimeout
        case .internalError: .internalServerError
        }
    }

    /// The problem document's `title`.
    var title: String {
        switch self {
        case .invalidParameter: "Invalid parameter"
        case .invalidDate: "Invalid date of sync"
        case .invalidField: "Invalid field"
        case .unknownField: "Unknown field"
        case .invalidID: "Invalid id"
        case .invalidJSON: "Invalid JSON"
        case .notFound: "Not found"
        case .unauthorized: "Unauthorized"
        case .invalidCredentials: "Invalid credentials"
        case .usernameTaken: "Username taken"
        case .signupDisabled: "Signup disabled"
        case .preconditionFailed: "Precondition failed"
        case .typeImmutable: "Type is immutable"
        case .payloadTooLarge: "Payload too large"
        case .methodNotAllowed: "Method not allowed"
        case .invalidGroup: "Invalid group"
        case .invalidSubrequest: "Invalid sub-request"
        case .tooManyRequests: "Too many requests"
        case .unavailable: "Service unavailable"
        case .unsupportedMediaType: "Unsupported media type"
        case .forbidden: "Forbidden"
        case .quotaExceeded: "Quota exceeded"
        case .lastOwner: "Last owner"
        case .requestTimeout: "Request timeout"
        case .internalError: "Internal error"
        }
    }
}

/// Outermost middleware: turns any thrown error into a problem response, so no error escapes unformatted.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let bodyMaxBytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return Self.problem(for: error, bodyMaxBytes: bodyMaxBytes, logger: context.logger).response
        }
    }

    /// The problem that answers `error`.
    static func problem(for error: any Error, bodyMaxBytes: Int, logger: Logger) -> Problem {
        switch error {
        case let error as SyncError:
            return Problem(error)
        case let error as HTTPError where error.status.code < 500 && error.status != .notFound && error.status != .contentTooLarge:
            return Problem(SyncError(.invalidParameter, detail: error.body ?? error.status.reasonPhrase), status: error.status)
        default:
            return Problem(domainError(for: error, bodyMaxBytes: bodyMaxBytes, logger: logger))
        }
    }

    /// The domain error that answers any other error.
    private static func domainError(for error: any Error, bodyMaxBytes: Int, logger: Logger) -> SyncError {
        switch error {
        case is CancellationError:
            // Work that nobody waits for any more (its deadline passed, its client left, the server stops): the
            // answer is dropped; never a 500 or an error in the log.
            logger.debug("request cancelled")
            return .unavailable
        case is NIOTooManyBytesError:
            return .payloadTooLarge(limit: bodyMaxBytes)
        case let error as HTTPError where error.status == .notFound:
            return .notFound("No such path.")
        case let error as HTTPError where error.status == .contentTooLarge:
            return .payloadTooLarge(limit: bodyMaxBytes)
        default:
            logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return SyncError(.internalError, detail: "An unexpected error occurred; it was logged.")
        }
    }
}
