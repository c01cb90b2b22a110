import Foundation
import NIOCore
import TestSupport
import Testing

@testable import SyncAPI

/// A full list is written from the stored bodies as bytes (issue 19): each body, a slice of the row the database
/// delivered, is copied once into the chunk written to the socket. The chunks must still join into exactly the answer,
/// and none may hold more than its size and one row.
@Suite("Full list chunks", .sharingTheMachine)
struct FullListChunksTests {
    @Test("slices of one buffer, of every size around the chunk size: the chunks join into the exact answer, each bounded")
    func chunksJoinExactly() throws {
        // Bodies of 1 byte to 40 KB, several pages, all slices of one shared buffer (as SQLite's pages are).
        let sizes = [1, 30, 32 * 1024 - 40, 5, 40 * 1024, 7, 32 * 1024, 2, 300] + Array(repeating: 1000, count: 300)
        let bodies = sizes.enumerated().map { index, size in #"{"id":"\#(index)","v":""# + String(repeating: "x", count: size) + #""}"# }
        var shared = ByteBuffer()
        var ends: [Int] = []
        for body in bodies {
            shared.writeString(body)
            ends.append(shared.writerIndex)
        }
        let slices = zip([0] + ends.dropLast(), ends).map { shared.getSlice(at: $0, length: $1 - $0) ?? ByteBuffer() }

        var chunks = FullListChunks(date: #"7."quoted""#)
        var written: [ByteBuffer] = []
        for page in stride(from: 0, to: slices.count, by: 64) {
            written += chunks.add(Array(slices[page..<min(page + 64, slices.count)]))
        }
        written.append(chunks.end())

        let largest = bodies.map(\.utf8.count).max() ?? 0
        for chunk in written.dropLast() {
            #expect(chunk.readableBytes >= FullListChunks.chunkBytes)
            #expect(chunk.readableBytes <= FullListChunks.chunkBytes + largest + 1)
        }
        var joined = ByteBuffer()
        for chunk in written { joined.writeImmutableBuffer(chunk) }
        let text = String(buffer: joined)
        #expect(text == #"{"date":"7.\"quoted\"","sync":false,"updated":["# + bodies.joined(separator: ",") + #"],"deleted":[]}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect((parsed?["updated"] as? [Any])?.count == bodies.count)
    }

    @Test("a list with no rows is an empty list")
    func emptyList() {
        var chunks = FullListChunks(date: "1.2")
        #expect(chunks.add([]).isEmpty)
        #expect(String(buffer: chunks.end()) == #"{"date":"1.2","sync":false,"updated":[],"deleted":[]}"#)
    }
}
