import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The session in a file readable by its owner only (0600): the default on Linux and for the command line. Apps on
/// Apple platforms should use `KeychainTokenStore`.
public struct FileTokenStore: TokenStore {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> ClientSession? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONDecoder().decode(ClientSession.self, from: data)
    }

    /// Writes a temporary file created 0600 (never readable by others, not even for a moment), then renames it over
    /// the old one, so a crash never leaves half a token.
    public func save(_ session: ClientSession) throws {
        let data = try JSONEncoder().encode(session)
        let temporary = path + ".tmp"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw SyncClientError.invalid("cannot write the token file \(path) (errno \(errno))") }
        let written = data.withUnsafeBytes { buffer in write(descriptor, buffer.baseAddress, buffer.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == data.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SyncClientError.invalid("cannot write the token file \(path)")
        }
    }

    public func clear() throws {
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }
}
