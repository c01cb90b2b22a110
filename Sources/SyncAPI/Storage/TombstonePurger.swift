import Logging
import ServiceLifecycle

/// Purges tombstones older than the retention at a fixed interval (protocol §8), as a service of the application's
/// service group, stopping on graceful shutdown.
public struct TombstonePurger: Service {
    let store: any MaintenanceStore
    let media: (any MediaStore)?
    let retentionSeconds: Int
    let interval: Duration
    let logger: Logger
    /// The wall clock in milliseconds since 1970.
    let clock: @Sendable () -> Int64
    /// The application's clock, for the interval.
    let timers: TimerWheel

    public init(
        store: any MaintenanceStore, media: (any MediaStore)? = nil, retentionSeconds: Int, interval: Duration = .seconds(3600), logger: Logger,
        clock: @escaping @Sendable () -> Int64 = WallClock.nowMs, timers: TimerWheel = .shared
    ) {
        self.clock = clock
        self.timers = timers
        self.store = store
        self.media = media
        self.retentionSeconds = retentionSeconds
        self.interval = interval
        self.logger = logger
    }

    /// One purge: tombstones last changed more than the retention ago, spaces emptied as long ago; also expired tokens
    /// and login-throttle windows older than a day (they can no longer block anyone). Returns how many tombstones went.
    public func purgeOnce(nowMs: Int64 = WallClock.nowMs()) async throws -> Int {
        let purged = try await store.purgeTombstones(cutoffMs: nowMs - Int64(retentionSeconds) * 1000)
        // Spaces left empty for the retention, before the media purge: their media are then named by no live item.
        _ = try await store.purgeEmptiedSpaces(cutoffMs: nowMs - Int64(retentionSeconds) * 1000)
        _ = try await store.purgeExpired(nowMs: nowMs, throttleBeforeMs: nowMs - 86_400_000)
        // Media no live item has named for the retention: a client that still shows a deleted post can fetch its
        // photo as long as it could learn of the deletion.
        _ = try await media?.purgeMedia(cutoffMs: nowMs - Int64(retentionSeconds) * 1000, nowMs: nowMs)
        return purged
    }

    /// Waits an interval (the schema is migrated meanwhile), purges, and again, until graceful shutdown.
    public func run() async throws {
        while true {
            do {
                try await cancelWhenGracefulShutdown { try await timers.sleep(for: interval) }
            } catch {
                return
            }
            do {
                let purged = try await purgeOnce(nowMs: clock())
                if purged > 0 { logger.info("purged tombstones", metadata: ["count": "\(purged)"]) }
            } catch {
                logger.warning("tombstone purge failed; will retry", metadata: ["error": "\(error)"])
            }
        }
    }
}
