import Foundation

/// The media a family may store (protocol §10), each recognised by its bytes' signature, never by the
/// `Content-Type` a client claims alone: a declared type must match what the bytes are.
public enum MediaType: String, CaseIterable, Sendable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case gif = "image/gif"
    case webp = "image/webp"
    case heic = "image/heic"
    case mp4 = "video/mp4"

    /// Bytes the signature check needs at most.
    public static let signatureLength = 16

    /// The type a `Content-Type` header names (parameters ignored, case-insensitive), if accepted.
    public init?(contentType: String) {
        let name = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        self.init(rawValue: name)
    }

    /// The type the first bytes are, if any accepted one.
    public static func sniff(_ bytes: some Collection<UInt8>) -> MediaType? {
        let b = Array(bytes.prefix(signatureLength))
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + prefix.count && Array(b[offset..<offset + prefix.count]) == prefix
        }
        // JPEG: SOI, then the first segment's marker (APPn, DQT, SOF, DHT or COM), not any byte.
        if starts([0xFF, 0xD8, 0xFF]), b.count > 3, jpegFirstMarkers.contains(b[3]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("ftyp".utf8), at: 4), b.count >= 12 {
            // The `ftyp` box holds at least its brand and minor version, and stays small.
            let boxSize = b[0..<4].reduce(0) { $0 << 8 | Int($1) }
            guard (16...4096).contains(boxSize) else { return nil }
            let brand = String(decoding: b[8..<12], as: UTF8.self)
            if heicBrands.contains(brand) { return .heic }
            return mp4Brands.contains(brand) ? .mp4 : nil
        }
        return nil
    }

    /// ISO base media file brands of HEIF images; every other `ftyp` brand is taken as MP4 video.
    static let heicBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]

    /// ISO base media file brands of the video that phones record and players play; any other brand is refused.
    static let mp4Brands: Set<String> = [
        "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "M4VP", "qt  ", "3gp4", "3gp5",
        "3gp6", "3g2a", "dash", "MSNV", "f4v ", "mmp4",
    ]

    /// The marker bytes a JPEG's first segment may start with after `FF D8 FF`.
    static let jpegFirstMarkers: Set<UInt8> = Set(0xE0...0xEF).union([0xDB, 0xC0, 0xC1, 0xC2, 0xC4, 0xFE])
}

/// One stored medium, as `GET /media/{sha256}` describes it.
public struct MediaInfo: Sendable, Equatable {
    public let sha256: String
    public let contentType: String
    public let size: Int64

    public init(sha256: String, contentType: String, size: Int64) {
        self.sha256 = sha256
        self.contentType = contentType
        self.size = size
    }

    /// The immutable URL that names it.
    public var url: String { MediaURL.prefix + sha256 }
}

/// Media URLs: `/api/v1/media/<sha256>`, 64 lowercase hex digits.
public enum MediaURL {
    public static let prefix = "/api/v1/media/"

    /// True for a well-formed SHA-256 name.
    public static func isHash(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// True for a URL of this server's media (`mediaUrl` and `pictureUrl` accept it).
    public static func isMediaURL(_ text: String) -> Bool {
        text.hasPrefix(prefix) && isHash(text.dropFirst(prefix.count))
    }

    /// The hashes of every media URL in stored item bodies (canonical JSON; nil for none), in order of appearance,
    /// once each.
    public static func hashes(in bodies: [String?]) -> [String] {
        var found: [String] = []
        for case let body? in bodies where body.contains(prefix) {
            var rest = body[...]
            while let range = rest.range(of: prefix) {
                let hash = rest[range.upperBound...].prefix(64)
                if isHash(hash), !found.contains(String(hash)) { found.append(String(hash)) }
                rest = rest[range.upperBound...]
            }
        }
        return found
    }
}
