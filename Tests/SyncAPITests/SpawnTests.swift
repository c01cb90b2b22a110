import Foundation
import TestSupport
import Testing

/// The processes the tests start (PostgreSQL, servers, tools) get none of the test process's descriptors.
@Suite("Spawned processes")
struct SpawnTests {
    @Test("a process the tests spawn holds no descriptor of theirs: SwiftNIO opens its sockets without close-on-exec")
    func noInheritedDescriptors() async throws {
        // Opened as SwiftNIO opens its sockets: inherited by every child unless the spawn closes it.
        let descriptor = open("/dev/null", O_RDONLY)
        #expect(descriptor > 2)
        defer { close(descriptor) }
        let listed = try await TestPostgres.run(["ls", "/proc/self/fd"])
        let descriptors = listed.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        // Standard input, output and error, and the folder `ls` itself opened.
        #expect(descriptors.sorted() == [0, 1, 2, 3], "\(descriptors)")
    }
}
