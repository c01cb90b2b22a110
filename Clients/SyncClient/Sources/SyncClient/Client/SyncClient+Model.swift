import Foundation
import GRDB

extension SyncClient {
    /// The model this client syncs: the server's as last read (kept in the replica), else the one the app was built
    /// with (`configuration.model`); nil before either.
    public var knownModel: ServerModel? { modelState.withLock { $0.model } ?? configuration.model }

    /// The server's model (`GET /api/v1/model`, protocol §12), read again when none is stored, at the first call of a
    /// launch, once `configuration.modelCheckInterval` has passed, or when `refresh` says so; the stored one otherwise.
    /// A server that adds a collection is followed at the next check: the new collection is downloaded whole. A model
    /// that changed also has the server's limits read again.
    @discardableResult
    public func serverModel(refresh: Bool = false) async throws -> ServerModel {
        let (stored, checked) = modelState.withLock { $0 }
        if let stored, !refresh, let checked, checked.duration(to: .now) < configuration.modelCheckInterval { return stored }
        let answer = try await call("GET", "/model", auth: false)
        guard answer.status == 200 else { throw SyncClientError.from(answer) }
        let model: ServerModel
        do {
            model = try JSONDecoder().decode(ServerModel.self, from: answer.body)
        } catch {
            throw SyncClientError.invalidAnswer("the model does not decode: \(error)")
        }
        if model != stored {
            // A changed model (a redeploy) may come with changed limits: the kept ones are dropped, read at next use.
            let text = String(decoding: answer.body, as: UTF8.self)
            try await replica.pool.write { db in
                try Replica.setMeta(db, MetaKey.model, text)
                try Replica.setMeta(db, MetaKey.limits, nil)
            }
        }
        modelState.withLock { $0 = (model, .now) }
        return model
    }

    /// The model's entry for `collection` from the known model; with no model known yet, what its name alone says
    /// (a top-level list), which is enough to queue a write.
    func modelCollection(_ collection: SyncCollection) throws -> ServerModel.Collection {
        guard let model = knownModel else { return ServerModel.Collection(name: collection, kind: .list) }
        return try model.require(collection)
    }
}
