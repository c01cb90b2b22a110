import Logging
import PostgresNIO
import ServiceLifecycle

/// The one PostgreSQL `LISTEN` connection of an instance: every write `NOTIFY`s its family in its transaction, and
/// this service wakes that family's streams in the `ChangeHub`. After a lost connection it listens again and wakes
/// every stream once, since notices may have been missed meanwhile.
public struct PostgresChangeListener: Service {
    /// The channel writes notify on, with `<family id>:<version>` as payload (`t:` and the family id for a token
    /// revocation).
    public static let channel = "syncapi_changes"
    /// The payload prefix of a token revocation.
    public static let revocationPrefix = "t:"

    let client: PostgresClient
    let hub: ChangeHub
    let logger: Logger

    public init(client: PostgresClient, hub: ChangeHub, logger: Logger) {
        self.client = client
        self.hub = hub
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown {
                    try await client.withConnection { conn in
                        try await conn.listen(on: Self.channel) { notices in
                            // Listening now: revocations reach this instance again.
                            hub.sessions.setLive(true)
                            hub.notifyAll()
                            for try await notice in notices {
                                if notice.payload.hasPrefix(Self.revocationPrefix) {
                                    hub.revokeTokens(family: String(notice.payload.dropFirst(Self.revocationPrefix.count)))
                                } else {
                                    // `<family id>:<version>`: the counter value the write committed.
                                    let parts = notice.payload.split(separator: ":", maxSplits: 1)
                                    hub.notify(family: String(parts[0]), version: parts.count > 1 ? Int64(parts[1]) : nil)
                                }
                            }
                        }
                    }
                }
            } catch {
                hub.sessions.setLive(false)
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("change listener lost its connection; listening again", metadata: ["error": "\(String(reflecting: error))"])
                hub.notifyAll()
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            }
        }
    }
}
