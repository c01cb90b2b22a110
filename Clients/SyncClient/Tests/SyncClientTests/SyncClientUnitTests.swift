import Testing

@testable import SyncClient

@Suite("placeholder")
struct Placeholder {
    @Test func sha() { #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") }
}
