import Logging
import PostgresNIO
import ServiceLifecycle
import SyncAPI

/// Checks every standby about once a second (protocol §13), as a service of the application's service group: a
/// standby that is down, answers errors, is not in recovery (promoted: no longer a copy of the primary) or lags past
/// the bound is left out of reads, and let in again by the first check that finds it healthy.
public struct StandbyHealthChecker: Service {
    let standbys: [Standby]
    let maxLag: Duration
    let interval: Duration
    let logger: Logger
    let timers: TimerWheel

    public init(standbys: [Standby], maxLag: Duration, interval: Duration = .seconds(1), timers: TimerWheel, logger: Logger) {
        self.timers = timers
        self.standbys = standbys
        self.maxLag = maxLag
        self.interval = interval
        self.logger = logger
    }

    /// The lag in seconds: zero when everything received is replayed (an idle primary sends nothing, and the last
    /// replayed commit's time then grows old without any lag); nil when the standby is not in recovery, has not
    /// replayed the schema yet, is not streaming from its primary, or cannot say.
    ///
    /// A standby whose WAL receiver stopped (a partition, a dead primary, `primary_conninfo` naming the old primary
    /// after a failover) keeps the last position it received, replays up to it, and would read as 0 lag for good with a
    /// frozen state: it must have a receiver that streams and heard from its primary within 90 s (the primary sends a
    /// keep-alive at least every `wal_sender_timeout / 2`, 30 s by default). A role that may not read
    /// `pg_stat_wal_receiver`'s details (it needs `pg_read_all_stats`, or `pg_monitor`) sees its status as null: then
    /// only a missing receiver is caught (docs/operations.md).
    static let lagQuery: PostgresQuery = """
        SELECT CASE
            WHEN NOT pg_is_in_recovery() OR to_regclass('families') IS NULL THEN NULL
            WHEN NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver) THEN NULL
            WHEN EXISTS (
                SELECT 1 FROM pg_stat_wal_receiver WHERE status IS NOT NULL
                AND (status <> 'streaming' OR last_msg_receipt_time IS NULL OR last_msg_receipt_time < now() - interval '90 seconds')
            ) THEN NULL
            WHEN pg_last_wal_receive_lsn() IS NOT NULL AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8
        END
        """

    /// One check of one standby: whether it may serve reads now.
    func check(_ standby: Standby) async -> (healthy: Bool, why: String) {
        do {
            let lag = try await StandbyTimeout.run(within: max(interval, .seconds(1)), timers: timers) {
                try await standby.store.client.statement(Self.lagQuery, logger: logger) { rows in
                    for try await lag in rows.decode(Double?.self) { return lag }
                    return nil
                }
            }
            guard let lag else { return (false, "not a standby in recovery, no schema yet, not streaming from its primary, or its lag is unknown") }
            if lag > Double(maxLag.components.seconds) + Double(maxLag.components.attoseconds) / 1e18 {
                return (false, "lags \(lag) s")
            }
            return (true, "lags \(lag) s")
        } catch {
            return (false, String(reflecting: error))
        }
    }

    /// Checks every standby at once; logs each change of state.
    public func checkAll() async {
        await withTaskGroup(of: Void.self) { group in
            for standby in standbys {
                group.addTask {
                    let (healthy, why) = await check(standby)
                    if standby.setHealthy(healthy) {
                        if healthy {
                            logger.notice("read database healthy: reads may go to it", metadata: ["standby": "\(standby.name)"])
                        } else {
                            logger.warning("read database left out of reads", metadata: ["standby": "\(standby.name)", "reason": "\(why)"])
                        }
                    }
                }
            }
        }
    }

    /// Checks, waits an interval, and again, until graceful shutdown.
    public func run() async throws {
        while true {
            await checkAll()
            do {
                try await cancelWhenGracefulShutdown { try await timers.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
