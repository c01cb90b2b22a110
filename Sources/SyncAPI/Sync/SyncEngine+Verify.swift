import Crypto

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
    /// `{"date", "lists": {name: {"count", "digest"}}}`. 404 for a `lastId` the server never knew.
    public func verify(_ session: Session, _ parameters: VerifyParameters) async throws -> [UInt8] {
        let full = collections.lists
        let paged: [(CollectionSpec, String?, [String]?)] = collections.paginated.map { spec in
            (spec, parameters.lastIds[spec.name], parameters.filters[spec.name] ?? nil)
        }
        let store = self.store
        let family = session.familyID
        let (delta, anchors) = try await store.withReadSnapshot { store in
            let delta = try await store.delta(familyID: family, collections: (full + paged.map(\.0)).map(\.name), since: nil)
            var anchors: [String: StoredItem] = [:]
            for (spec, lastId, _) in paged {
                guard let lastId else { continue }
                guard let anchor = try await store.item(familyID: family, key: ItemKey(collection: spec.name, id: lastId)) else {
                    throw SyncError.notFound("No \(spec.name) item \(lastId).")
                }
                anchors[spec.name] = anchor
            }
            return (delta, anchors)
        }
        var lists: [(key: String, value: JSONValue)] = []
        for spec in full { lists.append((spec.name, Self.summary(delta.rows[spec.name] ?? []))) }
        for (spec, lastId, types) in paged where lastId != nil {
            guard let anchor = anchors[spec.name] else { continue }
            // The part the client holds: at or above its last item in sort order (sort key desc, then id desc).
            let held = (delta.rows[spec.name] ?? []).filter { item in
                let key = item.sortMs ?? 0
                let anchorKey = anchor.sortMs ?? 0
                let above = key > anchorKey || (key == anchorKey && Array(item.id.utf8).lexicographicallyPrecedes(Array(anchor.id.utf8)) == false)
                return above && (types.map { $0.contains(item.tag ?? "") } ?? true)
            }
            lists.append((spec.name, Self.summary(held)))
        }
        var writer = JSONWriter(capacity: 512)
        writer.raw("{\"date\":")
        writer.string(try await token(delta.version, session))
        writer.raw(",\"lists\":")
        writer.value(.object(lists))
        writer.raw("}")
        return writer.bytes
    }

    /// `{"count", "digest"}` of live items: SHA-256 over, sorted by id (byte order), `id` NUL `modified` newline.
    static func summary(_ items: [StoredItem]) -> JSONValue {
        let live = items.filter { !$0.deleted }.sorted { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) }
        var hasher = SHA256()
        for item in live {
            let modified = item.body.flatMap { try? JSONParser.parse($0) }?["modified"]?.stringValue ?? ""
            hasher.update(data: Array(item.id.utf8) + [0] + Array(modified.utf8) + [0x0A])
        }
        return .object([("count", .number(Double(live.count))), ("digest", .string(Hex.lowercase(hasher.finalize())))])
    }
}
