import Basics
import Testing

/// Issue 24: "1 passkeys" and "1 credentials" in the tool's output; every count in a sentence now goes through
/// `counted`.
struct CountedTests {
    @Test(
        arguments: [
            (0, "passkey", nil, "0 passkeys"), (1, "passkey", nil, "1 passkey"), (2, "passkey", nil, "2 passkeys"),
            (1, "entry", "entries", "1 entry"), (3, "entry", "entries", "3 entries"),
            (1, "linked phone", nil, "1 linked phone"), (-1, "passkey", nil, "-1 passkeys"),
        ] as [(Int, String, String?, String)])
    func theNounIsPluralUnlessTheCountIsOne(count: Int, singular: String, plural: String?, text: String) {
        #expect(count.counted(singular, plural: plural) == text)
    }
}
