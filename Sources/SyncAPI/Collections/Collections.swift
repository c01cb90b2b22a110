/// The collections the server knows: those of the default model, `models/family.json` (protocol §2, §12), read from
/// the copy the binary carries. The names below are the family app's; their fields, limits, rules, kinds and order
/// all come from the model file.
public enum Collections {
    /// The default model, parsed and checked once (a test checks that the shipped file is valid and is this copy).
    public static let model: DataModel = {
        do {
            return try DataModel(json: Array(DataModel.familyFile.utf8))
        } catch {
            fatalError("the default model shipped in the binary is invalid: \(error)")
        }
    }()

    /// The default model's collections as the server uses them.
    public static let registry = CollectionRegistry(model)

    /// Every collection a client writes through `PUT/PATCH/GET/DELETE /{name}/{id}` (children under their parent's
    /// path), in the model file's order.
    public static let writable: [CollectionSpec] = registry.writable

    /// The collection named `name`, if declared.
    public static func named(_ name: String) -> CollectionSpec? { writable.first { $0.name == name } }

    /// Storage key of the family's public account profiles (written by signup and `POST /accounts`).
    public static let accountsKey = "accounts"
}
