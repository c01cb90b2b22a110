#if canImport(SwiftUI) && canImport(ImageIO)
import ImageIO
import SwiftUI

/// Shows a medium of the server (a wall post's photo, the family picture) from the SDK's media folder, downloaded
/// once with the session's token: `AsyncImage` cannot load these URLs, which need the Bearer token (protocol §10).
/// The image is decoded off the main actor, at most `maxPixelSize` pixels on its longer side (a feed of 12-megapixel
/// photos does not decode 48 MB per cell on the main thread).
@available(iOS 16, macOS 13, tvOS 16, watchOS 9, *)
public struct MediaImage<Placeholder: View>: View {
    let client: SyncClient
    let url: String
    let maxPixelSize: Int
    let placeholder: Placeholder
    @State private var image: Image?
    @Environment(\.displayScale) private var displayScale

    public init(client: SyncClient, url: String, maxPixelSize: Int = 2048, @ViewBuilder placeholder: () -> Placeholder) {
        self.client = client
        self.url = url
        self.maxPixelSize = maxPixelSize
        self.placeholder = placeholder()
    }

    public var body: some View {
        Group {
            if let image {
                image.resizable().scaledToFit()
            } else {
                placeholder
            }
        }
        .task(id: url) {
            guard let file = try? await client.media(url), let decoded = await MediaDecoding.image(file, maxPixelSize: maxPixelSize)
            else { return }
            image = Image(decorative: decoded, scale: displayScale)
        }
    }
}

/// Decoding of media files, off the caller's actor.
@available(iOS 16, macOS 13, tvOS 16, watchOS 9, *)
public enum MediaDecoding {
    /// The image in `file`, decoded now (not at its first drawing), at most `maxPixelSize` pixels on its longer side,
    /// turned upright as its EXIF orientation says; nil when the file is not an image.
    public static func image(_ file: URL, maxPixelSize: Int) async -> sending CGImage? {
        guard let source = CGImageSourceCreateWithURL(file as CFURL, [kCGImageSourceShouldCache: false] as CFDictionary) else { return nil }
        let options: [CFString: Any] = [
            kCGImageSourceCreateThumbnailFromImageAlways: true, kCGImageSourceCreateThumbnailWithTransform: true,
            kCGImageSourceShouldCacheImmediately: true, kCGImageSourceThumbnailMaxPixelSize: max(1, maxPixelSize),
        ]
        return CGImageSourceCreateThumbnailAtIndex(source, 0, options as CFDictionary)
    }
}
#endif
