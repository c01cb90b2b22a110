/// One download per medium at a time: two views showing one image would otherwise write the same partial file, and
/// both downloads then fail their digest check. A caller asking for a medium already on its way waits for that download
/// and gets its result; a caller that stops waiting leaves it running for the others.
actor MediaDownloads {
    private var running: [String: Task<String, any Error>] = [:]

    /// The file of medium `sha`, from the running download of it, else from `download` started now.
    func file(_ sha: String, _ download: @escaping @Sendable () async throws -> String) async throws -> String {
        if let task = running[sha] { return try await task.value }
        let task = Task { try await download() }
        running[sha] = task
        defer { running[sha] = nil }
        return try await task.value
    }
}
