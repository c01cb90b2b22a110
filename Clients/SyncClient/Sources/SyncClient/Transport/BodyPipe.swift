import Foundation

/// Hands a body that downloads (an async stream of pieces) to synchronous code, the replica's write transaction,
/// which pulls piece after piece and waits while none has arrived. The download runs in a task of its own; `cancel`
/// stops it (a sync that failed midway does not download the rest).
final class BodyPipe: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pieces: [Data] = []
    private var head = 0
    private var finished = false
    private var failure: (any Error)?
    private var feeder: Task<Void, Never>?

    init(_ body: AsyncThrowingStream<Data, any Error>) {
        let feeder = Task { [weak self] in
            do {
                for try await piece in body {
                    guard let self else { return }
                    try Task.checkCancellation()
                    self.push(piece)
                }
                // A cancelled iteration ends without an error: the body is not whole.
                self?.end(Task.isCancelled ? CancellationError() : nil)
            } catch {
                self?.end(error)
            }
        }
        condition.withLock { self.feeder = feeder }
    }

    deinit { feeder?.cancel() }

    private func push(_ piece: Data) {
        condition.withLock {
            guard !finished else { return }
            pieces.append(piece)
            condition.signal()
        }
    }

    private func end(_ error: (any Error)?) {
        condition.withLock {
            guard !finished else { return }
            finished = true
            failure = error
            condition.broadcast()
        }
    }

    /// The next piece, waiting for it; nil at the end of the body; throws the download's failure.
    func next() throws -> Data? {
        condition.lock()
        defer { condition.unlock() }
        while head == pieces.count, !finished { condition.wait() }
        if head < pieces.count {
            let piece = pieces[head]
            head += 1
            if head == pieces.count {
                pieces.removeAll(keepingCapacity: true)
                head = 0
            }
            return piece
        }
        if let failure { throw failure }
        return nil
    }

    /// Stops the download; a later `next` ends with `CancellationError`.
    func cancel() {
        let feeder = condition.withLock { self.feeder }
        feeder?.cancel()
        end(CancellationError())
    }
}
