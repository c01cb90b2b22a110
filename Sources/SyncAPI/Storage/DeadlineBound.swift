/// A store, or a service over stores, that can be bound to the deadline of the work calling it: its writes then ask
/// that budget before they begin, and its calls run inline under that deadline instead of under one of their own
/// (`Deadline.run(holding:)`). A request's handlers bind what they call to the budget in their context; background
/// work (purges, the listener's catch-up) calls unbound stores, whose every call gets its own deadline.
public protocol DeadlineBound: Sendable {
    /// A copy whose calls run under `budget` (nil: each call under a deadline of its own).
    func bounded(by budget: Deadline.Budget?) -> Self
}
