import Basics
import Crypto
import Testing

struct HexTests {
    @Test func encodesBothCases() {
        let bytes: [UInt8] = [0x00, 0x0F, 0xA5, 0xFF]
        #expect(bytes.hexString == "000fa5ff")
        #expect(bytes.upperHexString == "000FA5FF")
        #expect(bytes[1...2].hexString == "0fa5")
        #expect([UInt8]().hexString.isEmpty)
    }

    @Test func parsesEitherCaseAndRefusesAnythingElse() {
        #expect([UInt8](hex: "000fA5Ff") == [0x00, 0x0F, 0xA5, 0xFF])
        #expect([UInt8](hex: "") == [])
        for bad in ["0", "abc", "0g", "  ", "0x00", "ff "] {
            #expect([UInt8](hex: bad) == nil, "\(bad)")
        }
    }

    @Test func roundTripsEveryByte() {
        let all = (0...255).map(UInt8.init)
        #expect([UInt8](hex: all.hexString) == all)
        #expect([UInt8](hex: all.upperHexString) == all)
    }

    @Test func integersArePaddedToTheirDigits() {
        #expect(UInt8(0x0A).hexDigits(2) == "0a")
        #expect(UInt16(0x1A).hexDigits(4, uppercase: true) == "001A")
        #expect(UInt32(0x1234_5678).hexDigits(4) == "12345678")  // never truncated
        #expect(0.hexDigits(0) == "0")
    }

    @Test func aDigestsBytesAreItsSequence() {
        let digest = SHA256.hash(data: Array("abc".utf8))
        #expect(digest.bytes == Array(digest))
        #expect(digest.bytes.hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

struct DurationUnitsTests {
    @Test func secondsAndMilliseconds() {
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
        #expect(Duration.milliseconds(1500).inMilliseconds == 1500)
        #expect(Duration.microseconds(1999).inMilliseconds == 1)
        #expect(Duration.microseconds(1999).inMillisecondsRoundedUp == 2)
        #expect(Duration.microseconds(1).inMillisecondsRoundedUp == 1)
        #expect(Duration.zero.inMillisecondsRoundedUp == 0)
        #expect(Duration.seconds(-2).inMilliseconds == -2000)
    }

    @Test func descriptionsForMessages() {
        #expect(Duration.seconds(30).secondsDescription == "30 s")
        #expect(Duration.milliseconds(500).secondsDescription == "0.5 s")
    }
}
