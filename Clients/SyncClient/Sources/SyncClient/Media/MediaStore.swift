import Foundation

/// The replica's media files (protocol §10), in a folder beside it (`<replica>.media/`), each named by the SHA-256
/// of its bytes: uploads waiting to leave (never evicted until the server has them) and downloaded media (a cache
/// bounded by `SyncClientConfiguration.mediaCacheBytes`, least recently used first out). Media URLs are immutable,
/// so a cached file is never revalidated. A download in progress is `<sha256>.part`, resumed with `Range`.
struct MediaStore: Sendable {
    let folder: String
    let limit: Int

    init(replicaPath: String, limit: Int) throws {
        folder = replicaPath + ".media"
        self.limit = limit
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func path(_ sha256: String) -> String { folder + "/" + sha256 }
    func partPath(_ sha256: String) -> String { folder + "/" + sha256 + ".part" }

    /// The file of a medium, when complete here; its use time is refreshed (least recently used goes first).
    func file(_ sha256: String) -> URL? {
        let path = path(sha256)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
        return URL(fileURLWithPath: path)
    }

    /// Writes bytes under their name (atomically: a crash never leaves half a medium under a final name), 0600.
    func store(_ data: Data, sha256: String) throws {
        let temporary = partPath(sha256) + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw SyncClientError.invalid("cannot write the media file \(temporary)")
        }
        _ = try? FileManager.default.removeItem(atPath: path(sha256))
        try FileManager.default.moveItem(atPath: temporary, toPath: path(sha256))
    }

    /// Removes the least recently used complete files until the folder holds at most `limit` bytes, keeping the
    /// `pinned` ones (uploads not yet on the server) and the one just used.
    func evict(keeping pinned: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        var files: [(name: String, size: Int, used: Date)] = []
        var total = 0
        for name in names where !name.hasSuffix(".new") {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + name) else { continue }
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            total += size
            files.append((name, size, attributes[.modificationDate] as? Date ?? .distantPast))
        }
        for file in files.sorted(by: { $0.used < $1.used }) where total > limit {
            let sha = file.name.hasSuffix(".part") ? String(file.name.dropLast(5)) : file.name
            if pinned.contains(sha) { continue }
            if (try? FileManager.default.removeItem(atPath: folder + "/" + file.name)) != nil { total -= file.size }
        }
    }
}
