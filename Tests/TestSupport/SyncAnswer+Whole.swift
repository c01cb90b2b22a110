import NIOCore
import SyncAPI

extension SyncAnswer {
    /// The whole JSON answer, a streamed one collected: tests compare answers whole, the server never holds one.
    public func wholeBody() async throws -> [UInt8] {
        var bytes: [UInt8] = []
        switch content {
        case .notModified: return []
        case .whole(let body): return body
        case .cursor(let cursor): try await cursor { chunk in bytes.append(contentsOf: chunk.readableBytesView) }
        case .stream(let stream): while let chunk = try await stream.next() { bytes.append(contentsOf: chunk.readableBytesView) }
        }
        return bytes
    }
}
