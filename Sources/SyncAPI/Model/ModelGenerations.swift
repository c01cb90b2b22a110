/// Which dates of sync each collection can still answer after accepted breaking model changes (protocol §12).
///
/// Every accepted breaking change starts a new generation and marks the collections it touched with it; a date of
/// sync carries the generation it was issued in, and a date from before a collection's mark answers that
/// collection `sync: false` (a full answer), while it stays answerable for every collection the change left alone.
/// Generation 0 (no breaking change yet) writes dates with no generation, so an unchanged database's dates never change.
public struct ModelGenerations: Sendable, Equatable {
    public var current: Int
    /// Collection → the generation of the last breaking change that touched it.
    public var touched: [String: Int]

    public init(current: Int = 0, touched: [String: Int] = [:]) {
        self.current = current
        self.touched = touched
    }

    /// The oldest generation whose dates can answer all of `collections`.
    public func floor(_ collections: [String]) -> Int { collections.compactMap { touched[$0] }.max() ?? 0 }

    /// A new generation marking `collections` (a child collection marks its parent too: it travels inside it).
    public func next(touching collections: Set<String>, in models: [DataModel]) -> ModelGenerations {
        var out = self
        out.current += 1
        var names = collections
        for name in collections {
            for model in models { if let parent = model.collection(name)?.parent { names.insert(parent) } }
        }
        for name in names { out.touched[name] = out.current }
        return out
    }

    public var json: String {
        JSONWriter.encode(
            .object([
                ("current", .number(Double(current))),
                ("touched", .object(touched.sorted { $0.key < $1.key }.map { ($0.key, .number(Double($0.value))) })),
            ]))
    }

    public init(json text: String) throws {
        let value = try JSONParser.parse(text)
        guard case .number(let current)? = value["current"], case .object(let touched)? = value["touched"] else {
            throw ModelError("the recorded model generations cannot be read: \(text)")
        }
        self.current = Int(current)
        self.touched = [:]
        for (name, mark) in touched { if case .number(let n) = mark { self.touched[name] = Int(n) } }
    }
}
