/// A role in a space (protocol §15), in order of rights: a reader reads, a member also writes, an owner also renames
/// the space, invites, and changes or removes members.
public enum SpaceRole: String, Sendable, CaseIterable, Comparable {
    case reader, member, owner

    public static func < (a: SpaceRole, b: SpaceRole) -> Bool { a.rank < b.rank }

    private var rank: Int {
        switch self {
        case .reader: 0
        case .member: 1
        case .owner: 2
        }
    }
}

/// One space an account belongs to, as a request checks it.
public struct SpaceMembership: Sendable, Equatable {
    public let spaceID: String
    public let role: SpaceRole
    /// The space's counter when the account last joined it: a date of sync below it was issued before, and answers
    /// `sync: false` to this account (it may have missed deletes while it was out).
    public let sinceVersion: Int64

    public init(spaceID: String, role: SpaceRole, sinceVersion: Int64) {
        self.spaceID = spaceID
        self.role = role
        self.sinceVersion = sinceVersion
    }
}

/// The account a bearer token authenticates and every space it belongs to: what its requests may address. A request
/// then acts in one space, as a `Session`.
public struct AccountSession: Sendable, Equatable {
    public let accountID: String
    /// The space the unprefixed paths address: the one the account signed up into (or was added to) while it is still
    /// a member, else the first it joined; nil when it belongs to none.
    public let homeSpaceID: String?
    /// In the order the account joined them.
    public let memberships: [SpaceMembership]
    /// The space the account was made in (`accounts.family_id`), member of it or not: its profile items live there.
    public let signupSpaceID: String?

    /// `signupSpaceID`: the account's own family (`accounts.family_id`), home while it is a member of it.
    public init(accountID: String, signupSpaceID: String?, memberships: [SpaceMembership]) {
        self.accountID = accountID
        self.memberships = memberships
        self.signupSpaceID = signupSpaceID
        if let signupSpaceID, memberships.contains(where: { $0.spaceID == signupSpaceID }) {
            homeSpaceID = signupSpaceID
        } else {
            homeSpaceID = memberships.first?.spaceID
        }
    }

    /// The session of a request in `spaceID` (nil: the home space); nil when the account is not a member of it.
    public func session(in spaceID: String?) -> Session? {
        guard let id = spaceID ?? homeSpaceID, let membership = memberships.first(where: { $0.spaceID == id }) else { return nil }
        return Session(accountID: accountID, spaceID: id, role: membership.role, sinceVersion: membership.sinceVersion)
    }

    /// The cache keys a revocation may name for this account's tokens: each of its spaces, and the account itself.
    var revocationKeys: [String] { memberships.map(\.spaceID) + [Self.accountKey(accountID)] }

    /// The revocation key of an account (space ids never start with `@`).
    public static func accountKey(_ accountID: String) -> String { "@" + accountID }
}

/// A space as `GET /spaces` lists it for one account.
public struct SpaceRecord: Sendable, Equatable {
    public let id: String
    public let name: String
    public let role: SpaceRole

    public init(id: String, name: String, role: SpaceRole) {
        self.id = id
        self.name = name
        self.role = role
    }
}

/// A member of a space, as `GET /spaces/{id}/members` lists it.
public struct MemberRecord: Sendable, Equatable {
    public let accountID: String
    public let displayName: String
    public let role: SpaceRole

    public init(accountID: String, displayName: String, role: SpaceRole) {
        self.accountID = accountID
        self.displayName = displayName
        self.role = role
    }
}

/// An invitation to store: its code already hashed.
public struct NewInvitation: Sendable {
    public let hash: String
    public let spaceID: String
    public let role: SpaceRole
    public let uses: Int
    public let expiresMs: Int64
    /// The owner who minted it: its codes go when it leaves the space, is removed or stops being an owner.
    public let createdBy: String?

    public init(hash: String, spaceID: String, role: SpaceRole, uses: Int, expiresMs: Int64, createdBy: String? = nil) {
        self.hash = hash
        self.spaceID = spaceID
        self.role = role
        self.uses = uses
        self.expiresMs = expiresMs
        self.createdBy = createdBy
    }
}

/// A live invitation of a space, as `GET /spaces/{id}/invitations` lists it to an owner: never its code, which the
/// database does not keep.
public struct InvitationRecord: Sendable, Equatable {
    /// The first `idLength` hex digits of the code's SHA-256: names the invitation to revoke it, and tells nothing of
    /// the code.
    public let id: String
    public let role: SpaceRole
    public let usesLeft: Int
    public let expiresMs: Int64
    /// When and by whom it was minted; nil for a code minted before the server recorded them.
    public let createdMs: Int64?
    public let createdBy: String?

    /// 64 bits: no two live codes of a space share an id but by a chance nobody will meet.
    public static let idLength = 16

    public init(hash: String, role: SpaceRole, usesLeft: Int, expiresMs: Int64, createdMs: Int64?, createdBy: String?) {
        self.id = String(hash.prefix(Self.idLength))
        self.role = role
        self.usesLeft = usesLeft
        self.expiresMs = expiresMs
        self.createdMs = createdMs
        self.createdBy = createdBy
    }
}

/// How many spaces one account may own and belong to (protocol §15: 10 and 50 by default), how many members a space
/// holds (a family's accounts, §1: 20), and how many unused, unexpired invitations a space keeps at once (so that an
/// owner cannot fill the database with codes).
public struct SpaceLimits: Sendable, Equatable {
    public var owned: Int
    public var memberships: Int
    public var members: Int
    public var invitations: Int

    public init(owned: Int = 10, memberships: Int = 50, members: Int = 20, invitations: Int = 100) {
        self.owned = owned
        self.memberships = memberships
        self.members = members
        self.invitations = invitations
    }
}

extension SpaceRole {
    /// A role as the database stores it; an unknown value (never written by this server) reads as the least rights.
    package init(stored: String) { self = SpaceRole(rawValue: stored) ?? .reader }
}

extension SpaceLimits {
    /// 403 `quota_exceeded` when an account in `memberships` spaces cannot join one more, or owning `owned` (when it
    /// would own the new one) cannot own one more.
    package static func check(memberships: Int, owned: Int?, limits: SpaceLimits) throws {
        guard memberships < limits.memberships else {
            throw SyncError.quotaExceeded("An account belongs to at most \(limits.memberships) spaces.")
        }
        if let owned { try checkOwned(owned, limits: limits) }
    }

    /// 403 `quota_exceeded` when an account owning `owned` spaces cannot own one more (a space it creates, an owner code
    /// it accepts, a role raised to owner).
    package static func checkOwned(_ owned: Int, limits: SpaceLimits) throws {
        guard owned < limits.owned else { throw SyncError.quotaExceeded("An account owns at most \(limits.owned) spaces.") }
    }

    /// 403 `quota_exceeded` when a space of `count` members cannot take one more.
    package static func checkMembers(_ count: Int, limits: SpaceLimits) throws {
        guard count < limits.members else { throw SyncError.quotaExceeded("A space holds at most \(limits.members) members.") }
    }

    /// 403 `quota_exceeded` when a space keeping `live` unused invitations cannot keep one more.
    package static func checkInvitations(live: Int, limits: SpaceLimits) throws {
        guard live < limits.invitations else {
            throw SyncError.quotaExceeded("A space keeps at most \(limits.invitations) unused invitations: wait for some to be used or expire.")
        }
    }
}
