import Basics
import PasskeyProvider
import Testing

/// A credential ID as a person types it (`passkey delete ID`): base64url as `passkey list` shows it, or hex, with
/// `b64:` or `hex:` to say which.
struct CredentialIDTextTests {
    @Test func anUnprefixedIDKeepsBothReadingsBase64URLFirst() throws {
        // "abcd" is valid base64url (3 bytes) and valid hex (2 bytes): the store decides which names a passkey.
        let text = try #require(CredentialIDText("abcd"))
        #expect(text.candidates == [[0x69, 0xB7, 0x1D], [0xAB, 0xCD]])
        // Hex as a person copies it from elsewhere, in capitals (issue 10, defect 11: hex was never tried).
        #expect(try #require(CredentialIDText("ABCD")).candidates == [[0x00, 0x10, 0x83], [0xAB, 0xCD]])
    }

    @Test func aPrefixSaysWhichReadingIsMeant() throws {
        #expect(try #require(CredentialIDText("hex:abcd")).candidates == [[0xAB, 0xCD]])
        #expect(try #require(CredentialIDText("b64:abcd")).candidates == [[0x69, 0xB7, 0x1D]])
        // Text that is base64url only.
        let id: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00]
        #expect(try #require(CredentialIDText(id.base64URLEncodedString)).candidates == [id])
    }

    @Test(arguments: ["", "hex:", "b64:", "hex:zz", "hex:abc", "b64:a", "not an id!", "+/+/"])
    func textThatNamesNoBytesIsRefused(text: String) {
        #expect(CredentialIDText(text) == nil)
    }

    @Test func identicalReadingsAreListedOnce() throws {
        // Only possible when both readings decode to the same bytes; an empty reading is never a candidate.
        let text = try #require(CredentialIDText("00"))
        #expect(text.candidates.count == Set(text.candidates).count)
        #expect(!text.candidates.contains([]))
    }
}
