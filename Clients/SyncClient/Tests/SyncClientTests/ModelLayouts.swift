@testable import SyncClient

/// The default model's collections as the replica's functions take them (`Replica.apply(db, .contacts, …)`), and the
/// group ids of its sync endpoints.
extension ServerModel.Collection {
    static var contacts: Self { ServerModel.family[.contacts]! }
    static var events: Self { ServerModel.family[.events]! }
    static var places: Self { ServerModel.family[.places]! }
    static var threads: Self { ServerModel.family[.threads]! }
    static var messages: Self { ServerModel.family[.messages]! }
    static var wall: Self { ServerModel.family[.wall]! }
    static var comments: Self { ServerModel.family[.comments]! }
    static var members: Self { ServerModel.family[.members]! }
}

extension ServerModel {
    /// The members of `familysync`, as a bundle answer applies them.
    static var familyBundle: [Collection] { family.endpoints.first { $0.name == "familysync" }!.members }

    /// The group ids of the protocol's examples (`c`, `t`, …) as the SDK names its calls (by endpoint).
    static let exampleIDs = [
        "c": "ctcsync", "e": "evtsync", "p": "plcsync", "t": "msgsyncthread", "w": "wallsync", "f": "familysync", "v": "verify",
    ]
}
