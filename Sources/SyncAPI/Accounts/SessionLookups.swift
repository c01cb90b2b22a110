import Synchronization

/// The database lookups of tokens in flight: callers asking for one token while its lookup runs wait for that lookup
/// instead of starting their own. One account's streams all recheck the same token, and when its cached session
/// expires they would otherwise all read the database at once and exhaust the pool.
final class SessionLookups: Sendable {
    typealias Found = (session: AccountSession, expiresMs: Int64)?

    private enum Outcome: Sendable {
        case done(Result<Found, any Error>)
        /// The lookup ended before this caller could wait for it: look again.
        case again
    }

    private let waiting = Mutex<[String: [CheckedContinuation<Outcome, Never>]]>([:])

    /// How many callers wait for the running lookup of `key` (nil: none runs).
    func waiters(_ key: String) -> Int? { waiting.withLock { $0[key]?.count } }

    /// The lookup of `key`: `read` runs unless one for the key is running, whose answer is then shared. A caller whose
    /// shared lookup was cancelled (its own caller went away) looks again itself.
    func lookup(_ key: String, _ read: () async throws -> Found) async throws -> Found {
        while true {
            let leads = waiting.withLock { state -> Bool in
                guard state[key] == nil else { return false }
                state[key] = []
                return true
            }
            if leads {
                let result: Result<Found, any Error>
                do {
                    result = .success(try await read())
                } catch {
                    result = .failure(error)
                }
                let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
                for waiter in waiters { waiter.resume(returning: .done(result)) }
                return try result.get()
            }
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let queued = waiting.withLock { state -> Bool in
                    guard state[key] != nil else { return false }
                    state[key]!.append(continuation)
                    return true
                }
                if !queued { continuation.resume(returning: .again) }
            }
            switch outcome {
            case .again: continue
            case .done(.failure(let error)) where error is CancellationError && !Task.isCancelled: continue
            case .done(let result): return try result.get()
            }
        }
    }
}
