import NIOCore

/// A computed sync answer: its date of sync (also its ETag) and how its JSON body comes.
public struct SyncAnswer: Sendable {
    /// How the JSON body of an answer comes.
    public enum Content: Sendable {
        /// The client's `If-None-Match` named this very date: 304 with no body.
        case notModified
        /// Written once, whole.
        case whole([UInt8])
        /// Produced chunk by chunk from a cursor of its own (a full list), read by the response writer.
        case stream(AnswerStream)
        /// Read from a group's pinned snapshot as it is written, in the writing task, chunk by chunk through `emit`.
        case cursor(@Sendable (_ emit: (ByteBuffer) async throws -> Void) async throws -> Void)
    }

    /// The new date of sync.
    public let date: String
    public let content: Content

    public init(date: String, _ content: Content) {
        self.date = date
        self.content = content
    }

    /// The bytes of a whole answer; empty for any other content.
    public var body: [UInt8] {
        guard case .whole(let bytes) = content else { return [] }
        return bytes
    }

    /// The stream of a streamed answer.
    public var stream: AnswerStream? {
        guard case .stream(let stream) = content else { return nil }
        return stream
    }
}
