import Hummingbird
import Logging
import NIOCore
import SyncAPI

/// Renders every error as RFC 9457 `application/problem+json` with the stable `code` of protocol §7.
extension SyncError {
    /// The problem document of this error.
    var problemJSON: [UInt8] {
        var members: [(key: String, value: JSONValue)] = [
            ("type", .string("https://syncapi.dev/problems/\(code)")),
            ("title", .string(Self.titles[code] ?? code)),
            ("status", .number(Double(status))),
            ("detail", .string(detail)),
            ("code", .string(code)),
        ]
        if let field { members.append(("field", .string(field))) }
        var writer = JSONWriter()
        writer.value(.object(members))
        return writer.bytes
    }

    /// The HTTP response of this error.
    var response: Response {
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let allow { headers[.allow] = allow.joined(separator: ", ") }
        if status == 401 { headers[.wwwAuthenticate] = "Bearer" }
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: problemJSON)))
    }

    static let titles: [String: String] = [
        "invalid_parameter": "Invalid parameter", "invalid_date": "Invalid date of sync", "invalid_field": "Invalid field",
        "unknown_field": "Unknown field", "invalid_id": "Invalid id", "invalid_json": "Invalid JSON", "not_found": "Not found",
        "unauthorized": "Unauthorized", "invalid_credentials": "Invalid credentials", "username_taken": "Username taken",
        "signup_disabled": "Signup disabled", "precondition_failed": "Precondition failed", "type_immutable": "Type is immutable",
        "payload_too_large": "Payload too large", "method_not_allowed": "Method not allowed", "invalid_group": "Invalid group",
        "invalid_subrequest": "Invalid sub-request", "too_many_requests": "Too many requests", "unavailable": "Service unavailable",
        "unsupported_media_type": "Unsupported media type", "request_timeout": "Request timeout", "internal": "Internal error",
        "forbidden": "Forbidden",
        "quota_exceeded": "Quota exceeded",
    ]
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

    /// The domain error that answers `error`.
    static func problem(for error: any Error, bodyMaxBytes: Int, logger: Logger) -> SyncError {
        switch error {
        case let error as SyncError:
            return error
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
        case let error as HTTPError where error.status.code < 500:
            return SyncError(code: "invalid_parameter", status: error.status.code, detail: error.body ?? error.status.reasonPhrase)
        default:
            logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return SyncError(code: "internal", status: 500, detail: "An unexpected error occurred; it was logged.")
        }
    }
}
