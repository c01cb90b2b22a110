import SyncAPI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many client connections the process's open-file limit lets an instance hold.
///
/// Past the limit nothing fails cleanly: `accept` and database connections fail, and on Linux libdispatch (under Swift
/// concurrency) stops the process with SIGILL when it cannot open the `/proc` file it reads to watch its worker
/// threads. So the connection ceiling (`--max-connections`) stays below the limit, with room for what the instance
/// opens besides clients: database connections, SQLite files, media files, the runtime's own.
public enum DescriptorBudget {
    /// Descriptors kept for everything but client connections, besides the database connections themselves.
    public static let reserve = 512

    /// Raises the soft open-file limit to the hard one (what the operator allowed the process): `serve` does, once, at
    /// start.
    public static func raiseLimit() {
        var limit = rlimit()
        guard getrlimit(resourceNoFile, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resourceNoFile, &limit)
    }

    /// The soft open-file limit now (`Int.max` when unlimited or unknown).
    public static func currentLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(resourceNoFile, &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else { return Int.max }
        return Int(limit.rlim_cur)
    }

    /// The connection ceiling for `configuration` under an open-file limit of `limit`: `maxConnections`, or what the
    /// limit holds after the database connections and `reserve` (half the limit at the least, for a tiny limit).
    public static func connectionCeiling(_ configuration: AppConfiguration, limit: Int) -> Int {
        let pool = configuration.databasePool
        let database: Int
        switch configuration.database {
        case .postgres:
            // The pool, the snapshot pool, the LISTEN connection, and a pool per hot standby.
            database = pool.connections * (1 + configuration.readDatabases.count) + (pool.snapshotConnections ?? 0) + 2
        case .sqlite:
            // Each connection holds the file, its WAL and its shared memory.
            database = 3 * 32
        }
        let held = limit == Int.max ? Int.max : max(limit / 2, limit - reserve - database)
        return max(1, min(configuration.maxConnections, held))
    }

    #if canImport(Glibc)
    private static let resourceNoFile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceNoFile = RLIMIT_NOFILE
    #endif
}
