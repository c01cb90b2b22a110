import NIOCore
import Synchronization

extension SyncEngine {
    /// A full list (`sync: false`) streamed from the database cursor (issue 9): the date comes first, from the same
    /// snapshot as the rows, then the items a few chunks at a time, so an answer of 100,000 items never sits whole
    /// in memory. The read runs in a task of its own that ends when the answer is written, or when the client stops
    /// reading (`AnswerStream`'s stall limit), so an answer dropped by the request deadline never holds the database.
    func streamedFullList(_ session: Session, _ collection: CollectionSpec, ifNoneMatch: String?) async throws -> SyncAnswer {
        let databaseID = try await databaseID()
        let stream = AnswerStream(producerStallLimit: streamDeadline)
        let encoder = FullListEncoder(stream: stream)
        let store = self.store
        let familyID = session.familyID
        stream.produce {
            do {
                try await store.streamLiveRows(
                    familyID: familyID, collection: collection.name,
                    start: { version in
                        let date = SyncToken(databaseID: databaseID, familyID: familyID, version: version).string
                        encoder.start(date: date)
                        stream.setDate(date)
                    },
                    page: { rows in try await encoder.add(rows) })
                try await encoder.end()
                stream.finish()
            } catch {
                stream.finish(throwing: error)
            }
        }
        // The date comes with the snapshot: a pool that cannot give a connection within the deadline is a 503.
        let date = try await stream.date(within: streamDeadline)
        if Self.matches(ifNoneMatch, date: date) {
            stream.cancel()
            return SyncAnswer(date: date, body: [], notModified: true)
        }
        return SyncAnswer(date: date, body: [], notModified: false, stream: stream)
    }
}

/// Writes `{"date":…,"sync":false,"updated":[…],"deleted":[]}` into chunks of about `chunkBytes` as rows arrive;
/// called by one producer at a time.
final class FullListEncoder: Sendable {
    static let chunkBytes = 32 * 1024
    private let state = Mutex<(writer: JSONWriter, first: Bool)>((JSONWriter(capacity: chunkBytes + 4096), true))
    let stream: AnswerStream

    init(stream: AnswerStream) {
        self.stream = stream
    }

    func start(date: String) {
        state.withLock { state in
            state.writer.raw("{\"date\":")
            state.writer.string(date)
            state.writer.raw(",\"sync\":false,\"updated\":[")
        }
    }

    func add(_ rows: [StoredItem]) async throws {
        let full: [UInt8]? = state.withLock { state in
            for row in rows {
                if !state.first { state.writer.raw(",") }
                state.first = false
                state.writer.raw(row.body ?? "null")
            }
            guard state.writer.bytes.count >= Self.chunkBytes else { return nil }
            defer { state.writer = JSONWriter(capacity: Self.chunkBytes + 4096) }
            return state.writer.bytes
        }
        if let full { try await stream.send(ByteBuffer(bytes: full)) }
    }

    func end() async throws {
        let rest = state.withLock { state in
            state.writer.raw("],\"deleted\":[]}")
            return state.writer.bytes
        }
        try await stream.send(ByteBuffer(bytes: rest))
    }
}
