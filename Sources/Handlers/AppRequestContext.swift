import Hummingbird
import SyncAPI

/// The per-request context: Hummingbird's core storage plus the authenticated session, once checked.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `AuthMiddleware` on every data route.
    public var session: Session?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.session = nil
    }

    /// The caller's session; routes behind `AuthMiddleware` always have one.
    func requireSession() throws -> Session {
        guard let session else { throw SyncError.unauthorized }
        return session
    }
}
