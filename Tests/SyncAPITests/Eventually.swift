/// Polls `condition` every 10 ms for up to 5 s; true once it holds. For what a test can only wait for by looking: an
/// object freed, a waiter registered.
func eventually(_ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(5)
    while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    return condition()
}
