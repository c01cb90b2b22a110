import Testing

@testable import Handlers

/// The accounting of `BodyBudget` alone: what a body takes, it gives back, under the key it took it; an empty body
/// takes nothing and leaves no entry for its address (one per address ever seen would grow without end).
@Suite("Body budget accounting")
struct BodyBudgetAccountingTests {
    @Test("empty bodies leave nothing; shares come back whole, by address, IPv6 by /64")
    func accounting() throws {
        let budget = BodyBudget(limit: 1_000, perAddress: 300, exempt: ["10.0.0.9"])
        for n in 0..<1_000 {
            try budget.reserve(0, address: "198.51.100.\(n % 250)")
            budget.release(0, address: "198.51.100.\(n % 250)")
        }
        #expect(budget.addressesHolding == 0 && budget.inUse == 0)
        try budget.reserve(200, address: "2001:db8::1")
        // The same /64: past its share.
        #expect(throws: BodyBudget.Refusal.address) { try budget.reserve(200, address: "2001:db8::2") }
        try budget.reserve(200, address: "2001:db8:0:1::1")
        // The trusted proxy has no share of its own: only the instance's bound.
        try budget.reserve(500, address: "10.0.0.9")
        #expect(throws: BodyBudget.Refusal.instance) { try budget.reserve(200, address: "198.51.100.1") }
        budget.release(200, address: "2001:db8::1")
        budget.release(200, address: "2001:db8:0:1::1")
        budget.release(500, address: "10.0.0.9")
        #expect(budget.addressesHolding == 0 && budget.inUse == 0)
    }
}
