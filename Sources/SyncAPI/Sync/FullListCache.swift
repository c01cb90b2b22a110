import NIOCore
import Synchronization

/// The bytes of full-list answers without a date (`sync: false`), kept per date of sync and list, so that the
/// first sync of a list that has not changed since it was last read whole is one read of the space's counter and a
/// copy, not a cursor over every row (issue 57: every app's first sync, every reinstall).
///
/// Exact because a date names the space's counter on one history in one model generation (`SyncToken`), and every
/// write to a shared list moves that counter: the rows of a list at a date never change. Lists private to each
/// account are not kept (an account's rows go when it leaves a space without a write of its own: decisions.md,
/// "Full lists kept by date"). Bounded: at most `capacity` bytes kept, an answer over `entryLimit` is never kept, the
/// copies of answers being streamed hold at most `recordingLimit` bytes together (a copy that would pass either
/// stops), and past the capacity the least recently used answers go until a tenth of it is free.
public final class FullListCache: Sendable {
    /// 32 MiB unless configured (`--full-list-cache-mib`).
    public static let defaultCapacity = 32 << 20

    /// The most bytes kept in all; 0 keeps nothing.
    public let capacity: Int
    /// The largest answer kept: an eighth of the capacity (4 MiB by default: a list of 10,000 contacts is about
    /// 2.7 MB, of 1,000 about 270 KB).
    public let entryLimit: Int
    /// The most bytes the copies of answers being streamed hold together: a quarter of the capacity. However many
    /// large lists stream at once, their copies add at most that much to the cache's memory.
    public let recordingLimit: Int

    struct Key: Hashable {
        let date: String
        let collection: String
    }

    private struct Entry {
        let body: [UInt8]
        var used: UInt64
        /// What it holds: its body and its key (a kept delta's key, two dates, may weigh more than its body).
        let size: Int
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    private let state = Mutex(State())
    private let hitCount = Atomic<Int>(0)
    private let recording = Atomic<Int>(0)

    public init(capacity: Int = FullListCache.defaultCapacity) {
        self.capacity = max(0, capacity)
        entryLimit = self.capacity / 8
        recordingLimit = self.capacity / 4
    }

    /// Whether answers of `collection` (a storage name) may be kept: not a list private to each account.
    public func keeps(_ collection: String) -> Bool {
        capacity > 0 && !collection.contains("~")
    }

    /// The answer kept for `collection` at `date`, if any.
    public func answer(date: String, collection: String) -> [UInt8]? {
        state.withLock { state in
            let key = Key(date: date, collection: collection)
            guard state.entries[key] != nil else { return nil }
            hitCount.add(1, ordering: .relaxed)
            state.tick &+= 1
            state.entries[key]!.used = state.tick
            return state.entries[key]!.body
        }
    }

    /// Keeps the whole answer of `collection` at `date` (not when larger than `entryLimit`), dropping the least
    /// recently used answers past the capacity.
    public func keep(_ body: [UInt8], date: String, collection: String) {
        guard keeps(collection), body.count <= entryLimit else { return }
        state.withLock { state in
            let key = Key(date: date, collection: collection)
            if let old = state.entries[key] { state.bytes -= old.size }
            state.tick &+= 1
            let size = body.count + date.utf8.count + collection.utf8.count
            state.entries[key] = Entry(body: body, used: state.tick, size: size)
            state.bytes += size
            guard state.bytes > capacity else { return }
            // Past the capacity, the least recently used go until a tenth of it is free: one sort per tenth of the
            // capacity refilled, not a scan of every entry per answer kept (many small lists make many entries).
            let target = capacity - capacity / 10
            for (key, entry) in state.entries.sorted(by: { $0.value.used < $1.value.used }) {
                guard state.bytes > target else { break }
                state.entries[key] = nil
                state.bytes -= entry.size
            }
        }
    }

    /// How many answers were given from the cache since start.
    public var hits: Int { hitCount.load(ordering: .relaxed) }

    /// How many answers and bytes are kept (for tests and metrics).
    public var usage: (answers: Int, bytes: Int) {
        state.withLock { ($0.entries.count, $0.bytes) }
    }

    /// The bytes the copies of answers being streamed hold now.
    public var recordingBytes: Int { recording.load(ordering: .relaxed) }

    /// Takes `count` bytes of the recording budget; false (nothing taken) when they do not fit.
    func reserve(_ count: Int) -> Bool {
        var held = recording.load(ordering: .relaxed)
        while true {
            guard held + count <= recordingLimit else { return false }
            let (exchanged, now) = recording.compareExchange(expected: held, desired: held + count, ordering: .relaxed)
            if exchanged { return true }
            held = now
        }
    }

    /// Gives back bytes of the recording budget.
    func release(_ count: Int) {
        if count > 0 { recording.subtract(count, ordering: .relaxed) }
    }
}

/// The chunks of one streamed full-list answer, copied while they stay within the cache's entry limit and its
/// recording budget, kept whole once the answer ended. What it holds goes back to the budget when it ends, stops, or
/// is dropped with its answer (a client gone midway).
public final class FullListRecorder: Sendable {
    private struct State {
        var date: String?
        var body: [UInt8]?
    }

    private let state = Mutex(State())
    let cache: FullListCache
    let collection: String

    public init(cache: FullListCache, collection: String) {
        self.cache = cache
        self.collection = collection
    }

    deinit {
        state.withLock { cache.release($0.body?.count ?? 0) }
    }

    public func start(date: String) {
        state.withLock { state in
            cache.release(state.body?.count ?? 0)
            state = State(date: date, body: [])
        }
    }

    public func add(_ chunk: ByteBuffer) {
        state.withLock { state in
            guard let held = state.body?.count else { return }
            guard held + chunk.readableBytes <= cache.entryLimit, cache.reserve(chunk.readableBytes) else {
                cache.release(held)
                state.body = nil
                return
            }
            state.body!.append(contentsOf: chunk.readableBytesView)
        }
    }

    /// The answer ended whole: keep it.
    public func end() {
        let ended = state.withLock { state in
            defer { state = State() }
            return state
        }
        cache.release(ended.body?.count ?? 0)
        if let date = ended.date, let body = ended.body { cache.keep(body, date: date, collection: collection) }
    }
}
