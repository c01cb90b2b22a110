import NIOCore
import Synchronization

extension SyncEngine {
    /// A full list (`sync: false`) streamed from the database cursor (issue 9): the date comes first, from the same
    /// snapshot as the rows, then the items a few chunks at a time, so an answer of 100,000 items never sits whole
    /// in memory. The read runs in a task of its own that ends when the answer is written, or when the client stops
    /// reading (`AnswerStream`'s stall limit), so an answer dropped by the request deadline never holds the database.
    func streamedFullList(_ session: Session, _ collection: CollectionSpec, ifNoneMatch: String?) async throws -> SyncAnswer {
        let identity = try await databaseIdentity()
        // Its place in the budget of snapshot holders, given back when the producer ends, however it ends.
        let lease = try await snapshots.lease(session.accountID)
        let stream = AnswerStream(producerStallLimit: streamDeadline)
        stream.whenCancelled { lease.release() }
        let encoder = FullListEncoder(stream: stream)
        let store = self.store
        let familyID = session.familyID
        stream.produce {
            defer { lease.release() }
            do {
                try await store.streamLiveRows(
                    familyID: familyID, collection: collection.name,
                    start: { version in
                        let date = identity.token(familyID: familyID, version: version)
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

/// `{"date":…,"sync":false,"updated":[…],"deleted":[]}` in chunks of about `chunkBytes`, as rows arrive.
struct FullListChunks {
    static let chunkBytes = 32 * 1024
    private var writer = JSONWriter(capacity: chunkBytes + 4096)
    private var first = true

    init(date: String) {
        writer.raw("{\"date\":")
        writer.string(date)
        writer.raw(",\"sync\":false,\"updated\":[")
    }

    /// Adds rows; returns the chunks of about `chunkBytes` that are ready (a page of large rows makes several, so a
    /// chunk never holds more than `chunkBytes` and one row).
    mutating func add(_ rows: [StoredItem]) -> [[UInt8]] {
        var ready: [[UInt8]] = []
        for row in rows {
            if !first { writer.raw(",") }
            first = false
            writer.raw(row.body ?? "null")
            if writer.bytes.count >= Self.chunkBytes {
                ready.append(writer.bytes)
                writer = JSONWriter(capacity: Self.chunkBytes + 4096)
            }
        }
        return ready
    }

    /// The last chunk.
    mutating func end() -> [UInt8] {
        writer.raw("],\"deleted\":[]}")
        return writer.bytes
    }
}

/// `FullListChunks` fed by one producer at a time into an `AnswerStream`.
final class FullListEncoder: Sendable {
    private let chunks = Mutex<FullListChunks?>(nil)
    let stream: AnswerStream

    init(stream: AnswerStream) {
        self.stream = stream
    }

    func start(date: String) {
        chunks.withLock { $0 = FullListChunks(date: date) }
    }

    func add(_ rows: [StoredItem]) async throws {
        for full in chunks.withLock({ $0?.add(rows) ?? [] }) { try await stream.send(ByteBuffer(bytes: full)) }
    }

    func end() async throws {
        if let rest = chunks.withLock({ $0?.end() }) { try await stream.send(ByteBuffer(bytes: rest)) }
    }
}

extension SyncEngine {
    /// A full list inside a group's pinned snapshot: the date now, the rows when the answer is written, from the
    /// same snapshot, chunk by chunk (issue 16: a group of 20 full lists holds a few chunks, not 20 lists).
    func pinnedFullList(_ session: Session, _ collection: CollectionSpec, ifNoneMatch: String?) async throws -> SyncAnswer {
        let version = try await store.pinnedVersion(familyID: session.familyID)
        let date = try await token(version, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, body: [], notModified: true) }
        let store = self.store
        let familyID = session.familyID
        let name = collection.name
        var answer = SyncAnswer(date: date, body: [], notModified: false)
        answer.cursor = { emit in
            var chunks = FullListChunks(date: date)
            try await store.forEachPinnedLivePage(familyID: familyID, collection: name) { rows in
                for chunk in chunks.add(rows) { try await emit(ByteBuffer(bytes: chunk)) }
            }
            try await emit(ByteBuffer(bytes: chunks.end()))
        }
        return answer
    }
}
