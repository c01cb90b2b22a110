import NIOCore

/// A computed sync answer: its date of sync (also its ETag) and the JSON body, written once or streamed.
public struct SyncAnswer: Sendable {
    /// The new date of sync.
    public let date: String
    /// The whole JSON answer.
    public let body: [UInt8]
    /// True when the client's `If-None-Match` named this very date: answer 304 with no body.
    public let notModified: Bool
    /// When set, the JSON answer comes from here, chunk by chunk, instead of `body` (a full list read from a cursor).
    public var stream: AnswerStream? = nil
    /// When set, the JSON answer is read from the pinned snapshot of a group as it is written, in the writing task,
    /// chunk by chunk through `emit` (a full list inside `withReadSnapshot`).
    public var cursor: (@Sendable (_ emit: (ByteBuffer) async throws -> Void) async throws -> Void)? = nil

    /// The whole JSON answer, a streamed one collected (for callers that need it whole).
    public func wholeBody() async throws -> [UInt8] {
        if let cursor {
            var bytes: [UInt8] = []
            try await cursor { chunk in bytes.append(contentsOf: chunk.readableBytesView) }
            return bytes
        }
        guard let stream else { return body }
        var bytes: [UInt8] = []
        while let chunk = try await stream.next() { bytes.append(contentsOf: chunk.readableBytesView) }
        return bytes
    }
}
