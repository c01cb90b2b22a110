import Foundation

/// The iOS Data Protection class of the replica's files (the SQLite file, its journal, the media folder and the token
/// file): when the system may read them while the device is locked. Elsewhere it changes nothing (Linux, macOS).
///
/// `completeUntilFirstUserAuthentication` lets a background sync run while the device is locked after its first unlock;
/// `complete` keeps the data unreadable whenever the device is locked, so background syncs then fail (`.local`).
public enum ReplicaFileProtection: String, Sendable, CaseIterable {
    case complete
    case completeUnlessOpen
    case completeUntilFirstUserAuthentication
    case none

    /// Applies the class to `paths` that exist, and to files created later in the folders among them.
    func apply(to paths: [String]) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        let type: FileProtectionType =
            switch self {
            case .complete: .complete
            case .completeUnlessOpen: .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
            case .none: .none
            }
        for path in paths where FileManager.default.fileExists(atPath: path) {
            try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
        }
        #endif
    }
}
