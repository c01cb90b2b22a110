/// The three versions of an item in a write conflict (a 412 on push), for a `ConflictHandler` to merge.
public struct ConflictVersions: Sendable, Equatable {
    public let collection: SyncCollection
    public let id: String
    /// The server's version the local edit was made on (nil: created here).
    public let base: JSONObject?
    /// The local edit (nil: a delete).
    public let local: JSONObject?
    /// The server's version now (nil: deleted on the server).
    public let server: JSONObject?

    /// For tests and previews of a handler.
    public init(collection: SyncCollection, id: String, base: JSONObject?, local: JSONObject?, server: JSONObject?) {
        self.collection = collection
        self.id = id
        self.base = base
        self.local = local
        self.server = server
    }
}

/// How to settle a conflict.
public enum ConflictResolution: Sendable, Equatable {
    /// Keep the server's version; the local edit is dropped (the default).
    case keepServer
    /// Write the local edit over the server's version.
    case keepLocal
    /// Write this merged state instead.
    case merged(JSONObject)
}

/// Decides a conflict for one collection (`SyncClient.setConflictHandler`). Async: it may ask the user (the push
/// waits for the answer; other writes wait behind it, in order).
public typealias ConflictHandler = @Sendable (ConflictVersions) async -> ConflictResolution

/// A conflict on a typed model: the versions decoded (nil where absent, or where the JSON does not decode).
public struct ModelConflict<M: SyncModel>: Sendable {
    public let id: String
    public let base: M?
    public let local: M?
    public let server: M?

    public init(id: String, base: M?, local: M?, server: M?) {
        self.id = id
        self.base = base
        self.local = local
        self.server = server
    }
}

/// How to settle a typed conflict.
public enum ModelResolution<M: SyncModel>: Sendable {
    case keepServer
    case keepLocal
    /// Write this model instead.
    case merged(M)
}

extension SyncClient {
    /// Sets the hook that settles write conflicts (a 412 on push) for one collection. Without one, the server wins.
    public func setConflictHandler(_ collection: SyncCollection, _ handler: @escaping ConflictHandler) {
        conflictHandlers.withLock { $0[collection] = handler }
    }

    /// Sets a typed conflict hook for a model's collection (`setConflictHandler(Contact.self) { conflict in … }`).
    public func setConflictHandler<M: SyncModel>(
        _ type: M.Type, _ handler: @escaping @Sendable (ModelConflict<M>) async -> ModelResolution<M>
    ) throws {
        setConflictHandler(M.syncCollection) { versions in
            func decode(_ object: JSONObject?) -> M? {
                guard let object else { return nil }
                return try? SyncClient.decode(M.self, object, parent: nil)
            }
            let conflict = ModelConflict(
                id: versions.id, base: decode(versions.base), local: decode(versions.local), server: decode(versions.server))
            switch await handler(conflict) {
            case .keepServer: return .keepServer
            case .keepLocal: return .keepLocal
            case .merged(let model):
                guard var object = try? JSONValue(encoding: model).objectValue else { return .keepServer }
                object[parentKey] = nil
                return .merged(object)
            }
        }
    }
}
