import NIOCore
import Synchronization

/// The bytes of full-list answers without a date (`sync: false`), kept per date of sync and list, so that the
/// first sync of a list that has not changed since it was last read whole is one read of the space's counter and a
/// copy, not a cursor over every row (issue 57: every app's first sync, every reinstall).
///
/// Exact because a date names the space's counter on one history in one model generation (`SyncToken`), and every
/// write to a shared list moves that counter: the rows of a list at a date never change. Lists private to each
/// account are not kept (an account's rows go when it leaves a space without a write of its own: decisions.md,
/// "Full lists kept by date"). Bounded: at most `capacity` bytes in all, an answer over `entryLimit` is never kept
/// (and its copy stops there: concurrent large answers hold at most that much each), and past the capacity the least
/// recently used answers go until a tenth of it is free.
public final class FullListCache: Sendable {
    /// 32 MiB unless configured (`--full-list-cache-mib`).
    public static let defaultCapacity = 32 << 20

    /// The most bytes kept in all; 0 keeps nothing.
    public let capacity: Int
    /// The largest answer kept: a 64th of the capacity, at most 512 KiB (a list of 1,000 contacts is about 270 KiB).
    public let entryLimit: Int

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

    public init(capacity: Int = FullListCache.defaultCapacity) {
        self.capacity = max(0, capacity)
        entryLimit = min(capacity / 64, 512 << 10)
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
}

/// The chunks of one streamed full-list answer, copied while they stay within the cache's entry limit, kept whole
/// once the answer ended.
final class FullListRecorder: Sendable {
    private let state = Mutex<(date: String?, body: [UInt8]?)>((nil, nil))
    let cache: FullListCache
    let collection: String

    init(cache: FullListCache, collection: String) {
        self.cache = cache
        self.collection = collection
    }

    func start(date: String) {
        state.withLock { $0 = (date, []) }
    }

    func add(_ chunk: ByteBuffer) {
        state.withLock { state in
            guard state.body != nil else { return }
            guard state.body!.count + chunk.readableBytes <= cache.entryLimit else {
                state.body = nil
                return
            }
            state.body!.append(contentsOf: chunk.readableBytesView)
        }
    }

    /// The answer ended whole: keep it.
    func end() {
        let (date, body) = state.withLock { state in
            defer { state = (nil, nil) }
            return state
        }
        if let date, let body { cache.keep(body, date: date, collection: collection) }
    }
}
