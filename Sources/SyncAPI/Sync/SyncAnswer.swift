/// A computed sync answer: its date of sync (also its ETag) and the JSON body, written once.
public struct SyncAnswer: Sendable {
    /// The new date of sync.
    public let date: String
    /// The whole JSON answer.
    public let body: [UInt8]
    /// True when the client's `If-None-Match` named this very date: answer 304 with no body.
    public let notModified: Bool
}
