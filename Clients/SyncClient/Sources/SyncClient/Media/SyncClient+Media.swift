import Foundation
import GRDB
import Logging

extension SyncClient {
    /// Queues the upload of a photo or video (protocol §10) and answers its URL at once, offline too: the URL is the
    /// SHA-256 of the bytes (`/api/v1/media/<sha256>`), so an item can name it right away. Uploads leave before any
    /// item write (so an item never reaches the server before the medium it names), with the pushes of writes; the
    /// bytes stay in the media folder, counted in `status.pendingWrites`, until the server has them.
    @discardableResult
    public func upload(_ data: Data, contentType: String) async throws -> String {
        guard data.count <= configuration.mediaMaxBytes else {
            throw SyncClientError.invalid("the medium is \(data.count) bytes; the most is \(configuration.mediaMaxBytes) (mediaMaxBytes)")
        }
        let sha = SHA256.hex(Array(data))
        try mediaStore.store(data, sha256: sha)
        try await replica.pool.write { db in
            try db.execute(
                sql: "INSERT INTO uploads (sha256, contentType, size) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
                arguments: [sha, contentType, data.count])
        }
        try refreshCounts()
        schedulePush()
        return "/api/v1/media/" + sha
    }

    /// Queues the upload of a file (its bytes are copied into the media folder).
    @discardableResult
    public func upload(fileAt url: URL, contentType: String) async throws -> String {
        // Sized before it is read: a file too large is never loaded into memory.
        let size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0
        guard size <= configuration.mediaMaxBytes else {
            throw SyncClientError.invalid("the medium is \(size) bytes; the most is \(configuration.mediaMaxBytes) (mediaMaxBytes)")
        }
        return try await upload(try Data(contentsOf: url), contentType: contentType)
    }

    /// The uploads the server refused for good (a type it does not take, too large), with its answer.
    public func failedUploads() throws -> [FailedUpload] {
        try replica.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT sha256, contentType, status, code FROM uploads WHERE status IS NOT NULL ORDER BY seq").map {
                FailedUpload(url: "/api/v1/media/" + ($0[0] as String), contentType: $0[1], status: $0[2], code: ServerErrorCode(rawValue: $0[3]))
            }
        }
    }

    /// A local file of a medium of this server (`/api/v1/media/<sha256>`): from the media folder when it is there
    /// (never revalidated: media URLs are immutable), else downloaded with the session's token, resuming a download
    /// cut before with `Range`, checked against its SHA-256, then kept within `mediaCacheBytes`. Callers asking for
    /// one medium at once share one download.
    ///
    /// An item may also name media elsewhere (`https://cdn.example.com/cat.jpg`): fetched without the session's token
    /// (it is for this server only), kept in the same cache under the SHA-256 of its URL, at most `mediaMaxBytes`. Its
    /// bytes cannot be checked against a digest; `http` is refused unless to this machine or `allowsInsecureHTTP`.
    public func media(_ url: String) async throws -> URL {
        if let external = try Self.externalMediaURL(url, configuration) {
            let key = "external-" + SHA256.hex(Array(external.absoluteString.utf8))
            if let file = mediaStore.file(key) { return file }
            return URL(
                fileURLWithPath: try await logged(url) {
                    try await self.mediaDownloads.file(key) { try await self.fetchExternalMedia(external, key: key) }
                })
        }
        guard let sha = Self.mediaSHA(url) else { throw SyncClientError.invalid("not a media URL of this server: \(url)") }
        if let file = mediaStore.file(sha) { return file }
        return URL(fileURLWithPath: try await logged(url) { try await self.mediaDownloads.file(sha) { try await self.fetchMedia(sha) } })
    }

    /// A download, its failure logged (a cancelled one aside: the view that wanted it went away).
    private func logged(_ url: String, _ download: () async throws -> String) async throws -> String {
        do {
            return try await download()
        } catch {
            if !(error is CancellationError) {
                log.media.warning("download failed", metadata: SyncClientError.wrapping(error).logMetadata.merging(["url": "\(url)"]) { a, _ in a })
            }
            throw error
        }
    }

    /// An absolute URL of another server than this one's media (nil for this server's media URLs, absolute or not).
    static func externalMediaURL(_ text: String, _ configuration: SyncClientConfiguration) throws -> URL? {
        guard mediaSHA(text) == nil || URL(string: text)?.host.map({ $0 != configuration.serverURL.host }) == true,
            let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty
        else { return nil }
        let loopback = ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased())
        switch scheme {
        case "https": return url
        case "http" where loopback || configuration.allowsInsecureHTTP: return url
        default: throw SyncClientError.invalid("media must be https (or http to this machine): \(text)")
        }
    }

    /// Downloads a medium of another server into the cache, with no token and at most `mediaMaxBytes`.
    private func fetchExternalMedia(_ url: URL, key: String) async throws -> String {
        if mediaStore.file(key) != nil { return mediaStore.path(key) }
        let data = try await configuration.retryPolicy.run { () async throws -> Data in
            let status: Int
            let bytes: AsyncThrowingStream<Data, any Error>
            do {
                (status, bytes) = try await configuration.transport.stream(HTTPCall(method: "GET", url: url, headers: [:]))
            } catch let error as SyncClientError {
                throw error
            } catch {
                throw SyncClientError.offline("\(error.localizedDescription)")
            }
            guard status == 200 else {
                throw SyncClientError.from(status: status, body: nil, retryAfter: nil)
                    ?? .server(status: status, code: .unexpectedAnswer, detail: "\(url) answered \(status)")
            }
            var data = Data()
            do {
                for try await chunk in bytes {
                    guard data.count + chunk.count <= configuration.mediaMaxBytes else { throw TooLarge() }
                    data.append(chunk)
                }
            } catch is TooLarge {
                throw SyncClientError.invalid("\(url) is larger than \(configuration.mediaMaxBytes) bytes (mediaMaxBytes): not kept")
            } catch {
                throw SyncClientError.offline("the download was cut: \(error.localizedDescription)")
            }
            return data
        }
        try mediaStore.store(data, sha256: key)
        mediaStore.evict(keeping: try pinnedUploads().union([key]))
        return mediaStore.path(key)
    }

    /// Downloads medium `sha` into the media folder (unless a download that just ended put it there) and returns its path.
    private func fetchMedia(_ sha: String) async throws -> String {
        if mediaStore.file(sha) != nil { return mediaStore.path(sha) }
        // Each attempt resumes from what the last one wrote (a connection cut mid-download keeps its bytes).
        try await configuration.retryPolicy.run { try await self.download(sha) }
        let part = mediaStore.partPath(sha)
        let bytes = FileManager.default.contents(atPath: part) ?? Data()
        guard SHA256.hex(Array(bytes)) == sha else {
            _ = try? FileManager.default.removeItem(atPath: part)
            throw SyncClientError.server(status: 200, code: .mediaCorrupt, detail: "the downloaded bytes are not \(sha)")
        }
        try mediaStore.store(bytes, sha256: sha)
        _ = try? FileManager.default.removeItem(atPath: part)
        mediaStore.evict(keeping: try pinnedUploads().union([sha]))
        return mediaStore.path(sha)
    }

    /// Downloads into `<sha256>.part` as the bytes arrive, asking with `Range` for what it does not hold yet.
    private func download(_ sha: String) async throws {
        guard let token = session.withLock({ $0?.token }) else { throw SyncClientError.notSignedIn }
        let part = mediaStore.partPath(sha)
        if !FileManager.default.fileExists(atPath: part) {
            _ = FileManager.default.createFile(atPath: part, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        let have = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? NSNumber)?.intValue ?? 0
        var headers = ["Authorization": "Bearer \(token)"]
        if have > 0 { headers["Range"] = "bytes=\(have)-" }
        let status: Int
        let bytes: AsyncThrowingStream<Data, any Error>
        do {
            (status, bytes) = try await configuration.transport.stream(HTTPCall(method: "GET", url: url("/media/" + sha), headers: headers))
        } catch let error as SyncClientError {
            throw error
        } catch {
            throw SyncClientError.offline("\(error.localizedDescription)")
        }
        if status == 401 {
            sessionEnded()
            throw SyncClientError.notSignedIn
        }
        if status == 416 { return }  // the part already holds every byte (checked by the caller)
        guard status == 200 || status == 206 else {
            throw SyncClientError.from(status: status, body: nil, retryAfter: nil)
                ?? .server(status: status, code: .unexpectedAnswer, detail: "unexpected answer \(status)")
        }
        guard let handle = FileHandle(forWritingAtPath: part) else { throw SyncClientError.invalid("cannot write \(part)") }
        defer { try? handle.close() }
        if status == 200 { try handle.truncate(atOffset: 0) } else { try handle.seekToEnd() }
        var size = status == 200 ? 0 : have
        do {
            for try await chunk in bytes {
                size += chunk.count
                guard size <= configuration.mediaMaxBytes else { throw TooLarge() }
                try handle.write(contentsOf: chunk)
            }
        } catch is TooLarge {
            try? handle.close()
            _ = try? FileManager.default.removeItem(atPath: part)
            throw SyncClientError.invalid("the medium is larger than \(configuration.mediaMaxBytes) bytes (mediaMaxBytes): not kept")
        } catch {
            throw SyncClientError.offline("the download was cut: \(error.localizedDescription)")
        }
    }

    /// One authenticated call with raw bytes (media are not JSON).
    private func mediaCall(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        guard let token = session.withLock({ $0?.token }) else { throw SyncClientError.notSignedIn }
        var headers = headers
        headers["Authorization"] = "Bearer \(token)"
        return try await deliver(HTTPCall(method: method, url: url(path), headers: headers, body: body))
    }

    /// Forgets every upload and media file (sign-out, another account, reset): another account must not see them.
    static func eraseMedia(_ db: Database, _ store: MediaStore) throws {
        try db.execute(sql: "DELETE FROM uploads")
        if let names = try? FileManager.default.contentsOfDirectory(atPath: store.folder) {
            for name in names { _ = try? FileManager.default.removeItem(atPath: store.folder + "/" + name) }
        }
    }

    static func mediaSHA(_ url: String) -> String? {
        let prefix = "/api/v1/media/"
        let path = url.hasPrefix("/") ? url : (URL(string: url)?.path ?? "")
        guard path.hasPrefix(prefix) else { return nil }
        let sha = String(path.dropFirst(prefix.count))
        guard sha.count == 64, sha.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
        return sha
    }

    func pinnedUploads() throws -> Set<String> {
        Set(try replica.pool.read { db in try String.fetchAll(db, sql: "SELECT sha256 FROM uploads") })
    }

    /// Sends every upload waiting (first in, first out) before the item writes of a push. A transient failure stops
    /// the push (the writes wait: they may name these media); a permanent one is kept in `failedUploads()`.
    func pushUploads() async throws -> Int {
        let waiting = try await replica.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT sha256, contentType FROM uploads WHERE status IS NULL ORDER BY seq").map {
                (sha: $0[0] as String, contentType: $0[1] as String)
            }
        }
        var sent = 0
        for upload in waiting {
            guard let data = FileManager.default.contents(atPath: mediaStore.path(upload.sha)) else {
                try await replica.pool.write { db in
                    try db.execute(
                        sql: "UPDATE uploads SET status = 0, code = 'missing_file' WHERE sha256 = ?", arguments: [upload.sha])
                }
                continue
            }
            let answer = try await mediaCall("POST", "/media", body: data, headers: ["Content-Type": upload.contentType])
            if answer.status == 201 || answer.status == 200 {
                try await replica.pool.write { db in try db.execute(sql: "DELETE FROM uploads WHERE sha256 = ?", arguments: [upload.sha]) }
                sent += 1
                continue
            }
            let error = SyncClientError.from(answer)
            if error.isTransient || answer.status == 401 { throw error }
            let code = answer.json?["code"]?.stringValue ?? "http_\(answer.status)"
            try await replica.pool.write { db in
                try db.execute(sql: "UPDATE uploads SET status = ?, code = ? WHERE sha256 = ?", arguments: [answer.status, code, upload.sha])
            }
        }
        return sent
    }
}

/// A download past `mediaMaxBytes`.
private struct TooLarge: Error {}

/// An upload the server refused for good.
public struct FailedUpload: Sendable, Equatable {
    public let url: String
    public let contentType: String
    public let status: Int
    public let code: ServerErrorCode
}

extension SyncClient {
    /// The URL the server gives these bytes (`/api/v1/media/<sha256>`): the same offline and online.
    public static func mediaURL(of data: Data) -> String { "/api/v1/media/" + SHA256.hex(Array(data)) }
}
