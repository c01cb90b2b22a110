#if canImport(Security)
import Foundation
import Security

/// The session in the Keychain (Apple platforms): the token store apps should use.
public struct KeychainTokenStore: TokenStore {
    public let service: String
    public let account: String
    /// A Keychain access group shared with the app's extensions (`$(TeamID).com.example.shared`); nil: the app's own.
    public let accessGroup: String?

    public init(service: String, account: String = "session", accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    private var query: [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func load() throws -> ClientSession? {
        var query = self.query
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw SyncClientError.invalid("Keychain read failed: \(status)") }
        return try JSONDecoder().decode(ClientSession.self, from: data)
    }

    public func save(_ session: ClientSession) throws {
        try clear()
        var query = self.query
        query[kSecValueData as String] = try JSONEncoder().encode(session)
        query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(query as CFDictionary, nil)
        guard status == errSecSuccess else { throw SyncClientError.invalid("Keychain write failed: \(status)") }
    }

    public func clear() throws {
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else {
            throw SyncClientError.invalid("Keychain delete failed: \(status)")
        }
    }
}
#endif
