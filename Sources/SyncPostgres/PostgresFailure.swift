import Logging
import PostgresNIO
import SyncAPI

/// What a PostgreSQL failure means for the request that met it (protocol §8: a database that restarts, fails over,
/// deadlocks or is busy is never a 500).
enum PostgresFailure: Equatable {
    /// A domain error of the engine: passes through.
    case domain
    /// The transaction was rolled back whole by the server (serialization failure, deadlock): safe to run again.
    case retry
    /// The database is unreachable, shutting down, read-only after a failover, out of space or overloaded: 503.
    case unavailable
    /// The server refused a value (a data exception): the client's input, 400.
    case badInput
    /// Anything else: a bug, logged and answered 500.
    case unexpected

    init(_ error: any Error) {
        switch error {
        case is SyncError:
            self = .domain
        case is CancellationError, is ConnectionClosed:
            self = .unavailable
        case let error as PSQLError:
            guard let state = error.serverInfo?[.sqlState] else {
                // No server answer: connection refused, lost or closed, pool shut down, query cancelled.
                self = .unavailable
                return
            }
            self = Self.classify(sqlState: state)
        default:
            // The pool's own errors (its connection circuit breaker tripped while the server was away) are an outage.
            self = String(describing: type(of: error)) == "ConnectionPoolError" ? .unavailable : .unexpected
        }
    }

    /// By SQLSTATE (PostgreSQL appendix A).
    static func classify(sqlState state: String) -> PostgresFailure {
        switch state {
        case "40001", "40P01": return .retry
        case "25006", "55P03", "57014", "57P01", "57P02", "57P03", "57P04", "57P05": return .unavailable
        default: break
        }
        switch state.prefix(2) {
        case "08", "53", "58", "XX": return .unavailable
        case "22": return .badInput
        default: return .unexpected
        }
    }

    /// The error the caller sees.
    func domainError(for error: any Error, logger: Logger) -> any Error {
        switch self {
        case .domain:
            return error
        case .retry, .unavailable:
            if error is CancellationError {
                // The request was cancelled (its client went away, or its time limit passed): not an outage.
                logger.debug("database call cancelled")
            } else {
                logger.warning("database unavailable", metadata: ["error": "\(String(reflecting: error))"])
            }
            return SyncError.unavailable
        case .badInput:
            logger.info("database refused a value", metadata: ["error": "\(String(reflecting: error))"])
            return SyncError(.invalidField, detail: "A value of the request cannot be stored.")
        case .unexpected:
            logger.error("database error", metadata: ["error": "\(String(reflecting: error))"])
            return error
        }
    }
}
