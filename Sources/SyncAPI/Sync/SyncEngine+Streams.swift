import NIOCore
import Synchronization

extension SyncEngine {
    /// A full list (`sync: false`) streamed from the database cursor: the date comes first, from the same snapshot as
    /// the rows, then the items a few chunks at a time, so an answer of 100,000 items never sits whole in memory. The
    /// read runs as a child task of the `producers` service and ends when the answer is written, or when the client
    /// stops reading (`AnswerStream`'s stall limit), so an answer dropped by the request deadline never holds the
    /// database.
    func streamedFullList(_ session: Session, _ collection: CollectionSpec, ifNoneMatch: String?) async throws -> SyncAnswer {
        let store = self.store
        let spaceID = session.spaceID
        let name = collection.storageName(for: session.accountID)
        let recorder = fullLists.keeps(name) ? FullListRecorder(cache: fullLists, collection: name) : nil
        return try await streamedAnswer(session, ifNoneMatch: ifNoneMatch) { stream, identity in
            let encoder = FullListEncoder(stream: stream, recorder: recorder)
            try await store.streamLiveRows(
                spaceID: spaceID, collection: name,
                start: { counter in
                    let date = identity.token(spaceID: spaceID, version: counter.version, history: counter.lineage.history)
                    encoder.start(date: date)
                    stream.setDate(date)
                },
                page: { bodies in try await encoder.add(bodies) })
            try await encoder.end()
        }
    }

    /// An answer written by a producer, a child task of the `producers` service, that holds a place in the budget of
    /// snapshot holders while it reads: `read` sets the stream's date, from its snapshot, before it sends any chunk.
    /// The place is given back once `read` returned, always before the answer ends: a client that sends its next
    /// request the moment it has read this answer must find it free (given back just after the end, a reader of the
    /// account could be quicker: one 429 in a clean-clone CI run, OutageTests).
    func streamedAnswer(
        _ session: Session, ifNoneMatch: String?,
        _ read: @escaping @Sendable (AnswerStream, DatabaseIdentityValue) async throws -> Void
    ) async throws -> SyncAnswer {
        let identity = try await databaseIdentity()
        // Its place in the budget of snapshot holders, given back when the producer ends, however it ends.
        let lease = try await snapshots.lease(for: session)
        let stream = AnswerStream(producerStallLimit: streamDeadline, timers: timers)
        lease.track(stream)
        stream.produce(on: producers) {
            defer { lease.release() }
            do {
                try await read(stream, identity)
                lease.release()
                stream.finish()
            } catch {
                lease.release()
                stream.finish(throwing: error)
            }
        }
        // The date comes with the snapshot: a pool that cannot give a connection within the deadline is a 503.
        let date = try await stream.date(within: streamDeadline)
        if Self.matches(ifNoneMatch, date: date) {
            stream.cancel()
            return SyncAnswer(date: date, .notModified)
        }
        return SyncAnswer(date: date, .stream(stream))
    }
}

/// JSON in chunks of about `chunkBytes`, as rows arrive: each row's stored body is copied once, from the database's
/// bytes into the chunk that is written to the socket.
struct JSONChunks {
    static let chunkBytes = 32 * 1024
    private var chunk = Self.newChunk()
    private var first = true

    private static func newChunk() -> ByteBuffer { ByteBufferAllocator().buffer(capacity: chunkBytes + 4096) }

    /// Appends JSON text as it is.
    mutating func raw(_ bytes: [UInt8]) { chunk.writeBytes(bytes) }

    mutating func raw(_ text: StaticString) { chunk.writeStaticString(text) }

    /// The next row added is the first element of a new array.
    mutating func beginArray() { first = true }

    /// Adds rows, as elements of the array being written; returns the chunks of about `chunkBytes` that are ready (a
    /// page of large rows makes several, so a chunk never holds more than `chunkBytes` and one row).
    mutating func add(_ bodies: LiveBodies) -> [ByteBuffer] {
        var ready: [ByteBuffer] = []
        for body in bodies {
            if !first { chunk.writeInteger(UInt8(ascii: ",")) }
            first = false
            chunk.writeImmutableBuffer(body)
            if chunk.readableBytes >= Self.chunkBytes {
                ready.append(chunk)
                chunk = Self.newChunk()
            }
        }
        return ready
    }

    /// What is left to send.
    mutating func rest() -> ByteBuffer {
        defer { chunk = Self.newChunk() }
        return chunk
    }
}

/// `{"date":…,"sync":false,"updated":[…],"deleted":[]}` in chunks of about `JSONChunks.chunkBytes`, as rows arrive.
struct FullListChunks {
    static let chunkBytes = JSONChunks.chunkBytes
    private var chunks = JSONChunks()

    init(date: String) {
        var head = JSONWriter(capacity: 96)
        head.raw("{\"date\":")
        head.string(date)
        head.raw(",\"sync\":false,\"updated\":[")
        chunks.raw(head.bytes)
    }

    /// Adds rows; returns the chunks that are ready.
    mutating func add(_ bodies: LiveBodies) -> [ByteBuffer] { chunks.add(bodies) }

    /// The last chunk.
    mutating func end() -> ByteBuffer {
        chunks.raw("],\"deleted\":[]}")
        return chunks.rest()
    }
}

/// `FullListChunks` fed by one producer at a time into an `AnswerStream`, and copied for the `FullListCache` when
/// one records it.
final class FullListEncoder: Sendable {
    private let chunks = Mutex<FullListChunks?>(nil)
    let stream: AnswerStream
    let recorder: FullListRecorder?

    init(stream: AnswerStream, recorder: FullListRecorder? = nil) {
        self.stream = stream
        self.recorder = recorder
    }

    func start(date: String) {
        chunks.withLock { $0 = FullListChunks(date: date) }
        recorder?.start(date: date)
    }

    func add(_ bodies: LiveBodies) async throws {
        for full in chunks.withLock({ $0?.add(bodies) ?? [] }) { try await send(full) }
    }

    func end() async throws {
        if let rest = chunks.withLock({ $0?.end() }) { try await send(rest) }
        recorder?.end()
    }

    private func send(_ chunk: ByteBuffer) async throws {
        recorder?.add(chunk)
        try await stream.send(chunk)
    }
}

extension SyncEngine {
    /// A full list inside a group's pinned snapshot: the date now, the rows when the answer is written, from the
    /// same snapshot, chunk by chunk (so a group of 20 full lists holds a few chunks, not 20 lists).
    func pinnedFullList(
        _ session: Session, _ collection: CollectionSpec, _ snapshot: any SnapshotReads, ifNoneMatch: String?
    ) async throws -> SyncAnswer {
        let counter = try await snapshot.counter(spaceID: session.spaceID)
        let date = try await token(counter.version, counter.lineage, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
        let spaceID = session.spaceID
        let name = collection.storageName(for: session.accountID)
        // The snapshot's date names the list's rows: an answer kept for it is the one the cursor would write.
        if fullLists.keeps(name), let kept = fullLists.answer(date: date, collection: name) { return SyncAnswer(date: date, .whole(kept)) }
        return SyncAnswer(
            date: date,
            .cursor { emit in
                var chunks = FullListChunks(date: date)
                try await snapshot.forEachLivePage(spaceID: spaceID, collection: name) { bodies in
                    for chunk in chunks.add(bodies) { try await emit(chunk) }
                }
                try await emit(chunks.end())
            })
    }
}
