#if canImport(SwiftUI)
import SwiftUI

/// Shows a medium of the server (a wall post's photo, the family picture) from the SDK's media folder, downloaded
/// once with the session's token: `AsyncImage` cannot load these URLs, which need the Bearer token (protocol §10).
@available(iOS 16, macOS 13, tvOS 16, watchOS 9, *)
public struct MediaImage<Placeholder: View>: View {
    let client: SyncClient
    let url: String
    let placeholder: Placeholder
    @State private var image: Image?

    public init(client: SyncClient, url: String, @ViewBuilder placeholder: () -> Placeholder) {
        self.client = client
        self.url = url
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
            guard let file = try? await client.media(url) else { return }
            image = Self.image(file)
        }
    }

    static func image(_ file: URL) -> Image? {
        #if canImport(UIKit)
        return UIImage(contentsOfFile: file.path).map { Image(uiImage: $0) }
        #elseif canImport(AppKit)
        return NSImage(contentsOf: file).map { Image(nsImage: $0) }
        #else
        return nil
        #endif
    }
}
#endif
