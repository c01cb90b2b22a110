import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the server until SIGTERM or SIGINT, then shuts it down gracefully within `grace`.
///
/// Why not Hummingbird's `runService()`: its graceful shutdown waits for every request in flight, however long, and a
/// phone reading a long list at a few bytes a second, or dribbling an upload, held a rolling deploy's SIGTERM for as
/// long as it kept going. Past `grace` the requests still running are cancelled (their connections closed) and the
/// process exits.
public func runUntilShutdown(_ app: some ApplicationProtocol, grace: Duration, logger: Logger) async throws {
    var configuration = ServiceGroupConfiguration(
        services: [.init(service: app)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = grace
    try await ServiceGroup(configuration: configuration).run()
}
