import Crypto
import Synchronization

/// `GET /verify` (protocol §11): a count and a digest per list, so a client can prove its replica exact.
public struct VerifyParameters: Sendable {
    /// By paginated list: the last item the client holds (`threadsLastId`); a list without one is left out.
    public var lastIds: [String: String] = [:]
    /// By paginated list: the filter values the client follows (`types` of the wall; nil or absent: all).
    public var filters: [String: [String]?] = [:]

    public init() {}
}

extension SyncEngine {
    /// The family's lists now, with the date of sync of that state, read in one snapshot:
    /// `{"date", "lists": {name: {"count", "digest"}}}`. 404 for a `lastId` the server never knew. Rows are digested
    /// as the database hands them over, id and `modified` only: memory stays flat whatever the lists hold.
    public func verify(_ session: Session, _ parameters: VerifyParameters) async throws -> [UInt8] {
        // Only the lists the caller's role reads, and of a list private to each account its own items: it holds no other.
        let full = collections.lists.filter { session.role >= $0.access.read }.map { $0.storageName(for: session.accountID) }
        let paged = collections.paginated.filter { session.role >= $0.access.read }.compactMap { spec in
            parameters.lastIds[spec.name].map { (spec.name, $0, parameters.filters[spec.name] ?? nil) }
        }
        let family = session.spaceID
        let digests = VerifyDigests()
        // In a group's run, from its snapshot; else from one of its own.
        let read: @Sendable (any SnapshotReads) async throws -> SpaceCounter = { store in
            for name in full { digests.begin(name, held: nil) }
            for (name, lastId, types) in paged {
                guard let anchor = try await store.item(spaceID: family, key: ItemKey(collection: name, id: lastId)) else {
                    throw SyncError.notFound("No \(name) item \(lastId).")
                }
                digests.begin(name, held: VerifyDigests.Held(anchorSortMs: anchor.sortMs ?? 0, anchorID: anchor.id, types: types))
            }
            return try await store.forEachVerifyRow(spaceID: family, collections: full + paged.map(\.0)) { digests.add($0) }
        }
        let counter: SpaceCounter
        if let snapshot { counter = try await read(snapshot) } else { counter = try await store.withReadSnapshot(read) }
        var lists: [(key: String, value: JSONValue)] = []
        for name in full + paged.map(\.0) { lists.append((String(CollectionSpec.publicName(name)), digests.summary(name))) }
        var writer = JSONWriter(capacity: 512)
        writer.raw("{\"date\":")
        writer.string(try await token(counter.version, counter.lineage, session))
        writer.raw(",\"lists\":")
        writer.value(.object(lists))
        writer.raw("}")
        return writer.bytes
    }
}

/// The count and running SHA-256 of each list `/verify` answers for (protocol §11: over the live items sorted by id,
/// `id` NUL `modified` newline), fed one row at a time in id order.
final class VerifyDigests: Sendable {
    /// The part of a paginated list the client holds: at or above its last item in sort order (sort key desc, then id
    /// desc), within the filter values it follows.
    struct Held {
        let anchorSortMs: Int64
        let anchorID: String
        let types: [String]?

        func contains(_ row: VerifyRow) -> Bool {
            let key = row.sortMs ?? 0
            let above =
                key > anchorSortMs
                || (key == anchorSortMs && !row.id.utf8.lexicographicallyPrecedes(anchorID.utf8))
            return above && (types.map { $0.contains(row.tag ?? "") } ?? true)
        }
    }

    private struct Digest {
        var count = 0
        var hasher = SHA256()
        let held: Held?
    }

    private let digests = Mutex<[String: Digest]>([:])

    func begin(_ list: String, held: Held?) {
        digests.withLock { $0[list] = Digest(held: held) }
    }

    func add(_ row: VerifyRow) {
        digests.withLock { digests in
            guard var digest = digests[row.collection], digest.held?.contains(row) ?? true else { return }
            digests[row.collection] = nil
            digest.count += 1
            digest.hasher.update(data: Array(row.id.utf8))
            digest.hasher.update(data: [0])
            digest.hasher.update(data: Array((row.modified ?? "").utf8))
            digest.hasher.update(data: [0x0A])
            digests[row.collection] = digest
        }
    }

    /// `{"count", "digest"}` of a list.
    func summary(_ list: String) -> JSONValue {
        let digest = digests.withLock { $0[list] } ?? Digest(held: nil)
        return .object([("count", .number(Double(digest.count))), ("digest", .string(Hex.lowercase(digest.hasher.finalize())))])
    }
}
