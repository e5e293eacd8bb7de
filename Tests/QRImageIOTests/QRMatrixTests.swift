import QRImageIO
import Testing

struct QRMatrixTests {
    /// The 174-character Chrome URL: 6 alphanumeric characters and 168 digits. Mixed segments need
    /// 4 + 4 + 9 + 6 × 5.5 (FIDO:/) and 4 + 4 + 10 + 56 × 10 (digits) = 631 bits, which fit version 4-L's 640;
    /// byte mode needs 4 + 4 + 8 + 174 × 8 = 1408 bits: version 8-L (1552; version 7-L holds 1248).
    @Test func chromeURLVersionAndSizeInEachMode() throws {
        let automatic = try QRMatrix(encoding: TestURLs.chrome)
        #expect(automatic.version == 4)
        #expect(automatic.size == 33)
        #expect(automatic.errorCorrection == .low)
        let byte = try QRMatrix(encoding: TestURLs.chrome, mode: .byte)
        #expect(byte.version == 8)
        #expect(byte.size == 49)
        for matrix in [automatic, byte] {
            let image = try matrix.grayImage(moduleSize: 4)
            #expect(try QRImageReader.decode(image) == [TestURLs.chrome])
        }
    }

    @Test(arguments: QRMatrix.ErrorCorrection.allCases, QRMatrix.EncodingMode.allCases)
    func everyLevelAndModeDecodesToTheSameText(level: QRMatrix.ErrorCorrection, mode: QRMatrix.EncodingMode) throws {
        let matrix = try QRMatrix(encoding: TestURLs.chrome, errorCorrection: level, mode: mode)
        #expect(matrix.size == 17 + 4 * matrix.version)
        #expect(try QRImageReader.decode(matrix.grayImage(moduleSize: 3)) == [TestURLs.chrome])
    }

    @Test func higherLevelsNeedLargerSymbols() throws {
        let versions = try QRMatrix.ErrorCorrection.allCases.map {
            try QRMatrix(encoding: TestURLs.chrome, errorCorrection: $0).version
        }
        #expect(versions == versions.sorted())
        #expect(versions.first! < versions.last!)
    }

    @Test func generatedURLsRoundTripInBothModes() throws {
        for url in try TestURLs.generated(count: 12, seed: 0x51_5249_4D41_4745) {
            let automatic = try QRMatrix(encoding: url)
            let byte = try QRMatrix(encoding: url, mode: .byte)
            #expect(automatic.version < byte.version, "\(url)")
            #expect(try QRImageReader.decode(automatic.grayImage(moduleSize: 2)) == [url])
            #expect(try QRImageReader.decode(byte.grayImage(moduleSize: 2)) == [url])
        }
    }

    /// Case is kept: a lower-case prefix cannot go in an alphanumeric segment and must come back lower-case.
    @Test(arguments: ["fido:/" + TestURLs.chrome.dropFirst(6), "Hello, wörld! ✓", "https://example.com/a?b=c", "0"])
    func otherTextComesBackByteExact(text: String) throws {
        let matrix = try QRMatrix(encoding: text)
        #expect(try QRImageReader.decode(matrix.grayImage()) == [text])
    }

    /// Finder patterns sit in three corners: a 7 × 7 dark ring around a light ring around a 3 × 3 dark core.
    @Test func finderPatternsAndQuietZone() throws {
        let matrix = try QRMatrix(encoding: TestURLs.chrome)
        for (left, top) in [(0, 0), (matrix.size - 7, 0), (0, matrix.size - 7)] {
            for y in 0..<7 {
                for x in 0..<7 {
                    let ring = max(abs(x - 3), abs(y - 3))
                    #expect(matrix.isDark(x: left + x, y: top + y) == (ring != 2), "(\(left + x), \(top + y))")
                }
            }
        }
        #expect(!matrix.isDark(x: -1, y: 0))
        #expect(!matrix.isDark(x: 0, y: matrix.size))
    }

    @Test func textThatCannotBeEncodedIsRefused() {
        #expect(throws: QRImageError.textContainsNUL) { try QRMatrix(encoding: "FIDO:/1\u{0}2") }
        // Version 40-L holds 7089 digits, 2953 bytes.
        let digits = String(repeating: "7", count: 7090)
        #expect(throws: QRImageError.textTooLong(byteCount: 7090)) { try QRMatrix(encoding: digits) }
        #expect((try? QRMatrix(encoding: String(digits.dropLast())))?.version == 40)
        let bytes = String(repeating: "a", count: 2954)
        #expect(throws: QRImageError.textTooLong(byteCount: 2954)) { try QRMatrix(encoding: bytes, mode: .byte) }
    }

    @Test func grayImageLayoutAndLimits() throws {
        let matrix = try QRMatrix(encoding: "0")  // version 1: 21 × 21
        let image = try matrix.grayImage(moduleSize: 3, quietZone: 4)
        #expect(image.width == (21 + 8) * 3 && image.height == image.width)
        #expect(Set(image.pixels) == [0, 255])
        // The top-left module of the finder pattern starts after 4 × 3 light pixels in both directions.
        #expect(image.pixels[11 * image.width + 11] == 255)
        #expect(image.pixels[12 * image.width + 12] == 0)
        #expect(image.pixels[14 * image.width + 14] == 0)
        #expect(throws: QRImageError.parameterOutOfRange(name: "module size", value: 0)) {
            try matrix.grayImage(moduleSize: 0)
        }
        #expect(throws: QRImageError.parameterOutOfRange(name: "quiet zone", value: -1)) {
            try matrix.grayImage(quietZone: -1)
        }
        let large = try QRMatrix(encoding: String(repeating: "7", count: 7000))
        #expect(throws: QRImageError.imageTooLarge(width: (177 + 128) * 64, height: (177 + 128) * 64)) {
            try large.grayImage(moduleSize: 64, quietZone: 64)
        }
    }
}
