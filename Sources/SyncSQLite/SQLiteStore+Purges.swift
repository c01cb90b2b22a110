import SyncCore

/// The purges of tombstones and of emptied spaces in SQLite: the statements shared with the other backend
/// (`PurgeStatements`).
extension SQLiteStore {
    public func purgeTombstones(cutoffMs: Int64) async throws -> Int { try await PurgeStatements(self).purgeTombstones(cutoffMs: cutoffMs) }

    public func purgeEmptiedSpaces(cutoffMs: Int64) async throws -> Int {
        try await PurgeStatements(self).purgeEmptiedSpaces(cutoffMs: cutoffMs)
    }
}
