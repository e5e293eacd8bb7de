import QRImageIO
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

struct ImageFileTests {
    /// The Chrome URL's symbol, 2 pixels a module: 82 × 82 pixels.
    static func chromeImage() throws -> GrayImage {
        try QRMatrix(encoding: TestURLs.chrome).grayImage(moduleSize: 2)
    }

    // MARK: PNG writing

    @Test func pngBytesDecodeToTheSamePixels() throws {
        let matrix = try QRMatrix(encoding: TestURLs.chrome)
        let png = try matrix.pngBytes(moduleSize: 5, quietZone: 4)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        // IHDR: 205 × 205, bit depth 8, colour type 0 (gray).
        #expect(Array(png[16..<26]) == [0, 0, 0, 205, 0, 0, 0, 205, 8, 0])
        #expect(try GrayImage(pngBytes: png) == matrix.grayImage(moduleSize: 5, quietZone: 4))
    }

    @Test func writePNGIsAtomicReadableAndRescannable() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("qr.png")
        for url in try [TestURLs.chrome] + TestURLs.generated(count: 3, seed: 99) {
            let matrix = try QRMatrix(encoding: url)
            try matrix.writePNG(to: path, moduleSize: 3)  // the second and later writes replace the file
            #expect(try QRImageReader.decode(contentsOf: path) == [url])
            #expect(try GrayImage(contentsOf: path) == matrix.grayImage(moduleSize: 3))
        }
        #expect(directory.listing() == ["qr.png"])  // no temporary file left behind
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o644)
    }

    @Test func writePNGToAMissingDirectoryFails() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("missing/qr.png")
        #expect(throws: QRImageError.unwritableFile(path: path, reason: "No such file or directory")) {
            try QRMatrix(encoding: TestURLs.chrome).writePNG(to: path)
        }
    }

    // MARK: PNG reading: colour types and bit depths

    /// The Chrome symbol as PNGs of other formats libpng must convert: dark is black or dark blue.
    static func pngVariants() throws -> [(name: String, png: [UInt8])] {
        let image = try chromeImage()
        let (width, height) = (image.width, image.height)
        let rows = (0..<height).map { Array(image.pixels[($0 * width)..<(($0 + 1) * width)]) }
        let dark = rows.map { $0.map { $0 == 0 } }
        func make(_ depth: UInt8, _ type: UInt8, _ row: ([Bool]) -> [UInt8], chunks: [(String, [UInt8])] = [])
            -> [UInt8]
        {
            HandmadePNG.make(
                width: width, height: height, bitDepth: depth, colorType: type, rows: dark.map(row), extraChunks: chunks
            )
        }
        /// Bits, most significant first, 1 for light, padded to a whole byte.
        func packed(_ row: [Bool]) -> [UInt8] {
            stride(from: 0, to: row.count, by: 8).map { start in
                (0..<8).reduce(UInt8(0)) { byte, bit in
                    let light = start + bit < row.count && !row[start + bit]
                    return byte | (light ? 0x80 >> UInt8(bit) : 0)
                }
            }
        }
        return [
            ("gray 8", make(8, 0, { $0.map { $0 ? 0 : 255 } })),
            ("gray 1", make(1, 0, packed)),
            ("gray 16", make(16, 0, { $0.flatMap { $0 ? [0x00, 0x10] : [0xFF, 0xF0] } })),
            (
                "gray+alpha 16, light transparent",
                make(16, 4, { $0.flatMap { $0 ? [0, 0, 0xFF, 0xFF] : [0, 0, 0, 0] } })
            ),
            ("RGB 8, dark blue", make(8, 2, { $0.flatMap { $0 ? [0, 0, 139] : [255, 255, 255] } })),
            ("RGBA 8, light transparent black", make(8, 6, { $0.flatMap { $0 ? [0, 0, 0, 255] : [0, 0, 0, 0] } })),
            (
                "palette 1, transparent light",
                make(1, 3, packed, chunks: [("PLTE", [0, 0, 139, 0, 0, 0]), ("tRNS", [255, 0])])
            ),
        ]
    }

    @Test func pngOfAnyColourTypeAndDepthScans() throws {
        let directory = try TemporaryDirectory()
        for (index, variant) in try Self.pngVariants().enumerated() {
            let path = try directory.write(variant.png, to: "\(index).png")
            #expect(try QRImageReader.decode(contentsOf: path) == [TestURLs.chrome], "\(variant.name)")
        }
    }

    // MARK: PGM reading

    static func pgmHeader(_ magic: String, _ width: Int, _ height: Int, _ maxval: Int) -> [UInt8] {
        Array("\(magic)\n# written by ImageFileTests\n\(width) \(height)\n\(maxval)\n".utf8)
    }

    /// The Chrome symbol in each PGM flavour: binary 8 and 16 bits, plain with maxval 1 and 255.
    static func pgmVariants() throws -> [(name: String, pgm: [UInt8])] {
        let image = try chromeImage()
        let (width, height) = (image.width, image.height)
        let plain1 = image.pixels.map { $0 == 0 ? "0" : "1" }.joined(separator: " ")
        var plain255 = ""
        for row in 0..<height {
            plain255 +=
                image.pixels[(row * width)..<((row + 1) * width)].map(String.init).joined(separator: "\t") + "\r\n"
        }
        return [
            ("P5 maxval 255", pgmHeader("P5", width, height, 255) + image.pixels),
            ("P5 maxval 65535", pgmHeader("P5", width, height, 65535) + image.pixels.flatMap { [$0, $0] }),
            ("P5 maxval 3", pgmHeader("P5", width, height, 3) + image.pixels.map { $0 == 0 ? 0 : 3 }),
            ("P2 maxval 1", pgmHeader("P2", width, height, 1) + Array(plain1.utf8)),
            ("P2 maxval 255", pgmHeader("P2", width, height, 255) + Array(plain255.utf8)),
        ]
    }

    @Test func pgmOfEachFlavourScans() throws {
        let directory = try TemporaryDirectory()
        for (index, variant) in try Self.pgmVariants().enumerated() {
            let path = try directory.write(variant.pgm, to: "\(index).pgm")
            #expect(try GrayImage(contentsOf: path) == Self.chromeImage(), "\(variant.name)")
            #expect(try QRImageReader.decode(contentsOf: path) == [TestURLs.chrome], "\(variant.name)")
        }
    }

    @Test(arguments: [
        ("P5 3 1 255 \u{0}\u{80}\u{FF}", [0, 128, 255]),
        ("P2 3 1 2 0 1 2", [0, 128, 255]),
        ("P2 3 1 65535 0 32768 65535\n\n", [0, 128, 255]),
        ("P2#c\n3#c\n1 # comments touch the numbers\n1\n0 1 1", [0, 255, 255]),
        ("P5\t1\r1\u{0B}1\u{0C}\u{1}", [255]),
    ])
    func pgmSamplesAreScaledToEightBits(text: String, expected: [UInt8]) throws {
        let image = try GrayImage(pgmBytes: Array(text.unicodeScalars.map { UInt8($0.value) }))
        #expect(image.pixels == expected)
        #expect(image.width == expected.count && image.height == 1)
    }

    @Test(arguments: [
        ("P5", "truncated header: no width"),
        ("P5 ", "truncated header: no width"),
        ("P5x 1 1 255 a", "no whitespace before width"),
        ("P5 1x 1 255 a", "no whitespace before height"),
        ("P5 -1 1 255 a", "width is not a decimal number"),
        ("P5 12345678901 1 255 a", "width is not a decimal number"),
        ("P5 1 1 0 a", "maxval 0 is not in 1…65535"),
        ("P5 1 1 65536 aa", "maxval 65536 is not in 1…65535"),
        ("P5 1 1 255", "truncated header"),
        ("P5 1 1 255a", "no whitespace after maxval"),
        ("P5 2 2 255 abc", "truncated raster: 3 of 4 bytes"),
        ("P5 2 1 256 abc", "truncated raster: 3 of 4 bytes"),
        ("P5 1 1 255 ab", "data after the raster (1 bytes)"),
        ("P5 1 1 100 \u{FF}", "sample 255 exceeds maxval 100"),
        ("P2 2 2 255 1 2 3", "truncated raster: 6 bytes cannot hold 4 samples"),
        ("P2 2 1 255 1 2 3", "data after the last of 2 samples"),
        ("P2 2 1 255 1 2 x", "data after the last of 2 samples"),
        ("P2 2 1 255 1 # 2\n", "sample 1 is not a decimal number of at most 5 digits"),
        ("P2 2 1 255 1 256 ", "sample 256 exceeds maxval 255"),
        ("P2 2 1 65535 1 000001", "sample 1 is not a decimal number of at most 5 digits"),
        ("P2 2 1 255 1       ", "truncated raster: 1 of 2 samples"),
    ])
    func malformedPGMIsRefused(text: String, reason: String) {
        let bytes = Array(text.unicodeScalars.map { UInt8($0.value) })
        #expect(throws: QRImageError.invalidPGM(path: nil, reason: reason)) { try GrayImage(pgmBytes: bytes) }
    }

    @Test func pgmDimensionsAreCheckedBeforeAllocating() {
        #expect(throws: QRImageError.imageEmpty(width: 0, height: 5)) {
            try GrayImage(pgmBytes: Array("P5 0 5 255 ".utf8))
        }
        #expect(throws: QRImageError.imageEmpty(width: 5, height: 0)) {
            try GrayImage(pgmBytes: Array("P2 5 0 255 ".utf8))
        }
        // 10^10 pixels, 8193 × 8193 just above the 64 Mi limit, and the largest header numbers.
        for (width, height) in [(100_000, 100_000), (8193, 8193), (9_999_999_999, 9_999_999_999)] {
            #expect(throws: QRImageError.imageTooLarge(width: width, height: height)) {
                try GrayImage(pgmBytes: Array("P5 \(width) \(height) 255 ".utf8))
            }
        }
    }

    // MARK: Hostile and unusual files

    @Test func filesThatAreNotImagesAreRefusedWithTheirPath() throws {
        let directory = try TemporaryDirectory()
        for (name, bytes) in [
            ("empty", []), ("text", Array("hello, world\n".utf8)), ("ppm", Array("P6 1 1 255 abc".utf8)),
            ("pbm", Array("P4 8 1 x".utf8)), ("jpeg", [0xFF, 0xD8, 0xFF, 0xE0]), ("P", Array("P".utf8)),
        ] as [(String, [UInt8])] {
            let path = try directory.write(bytes, to: name)
            #expect(throws: QRImageError.unknownFormat(path: path)) { try QRImageReader.decode(contentsOf: path) }
        }
        #expect(
            QRImageError.unknownFormat(path: "/x/y.gif").description == "/x/y.gif is not a PNG or PGM image")
        let missing = directory.file("missing.png")
        #expect(throws: QRImageError.unreadableFile(path: missing, reason: "No such file or directory")) {
            try QRImageReader.decode(contentsOf: missing)
        }
        #expect(throws: QRImageError.unreadableFile(path: directory.path, reason: "not a regular file")) {
            try QRImageReader.decode(contentsOf: directory.path)
        }
        // A FIFO with no writer: opening it must not block.
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: QRImageError.unreadableFile(path: fifo, reason: "not a regular file")) {
            try QRImageReader.decode(contentsOf: fifo)
        }
    }

    @Test func oversizedFilesAreRefusedUnread() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write(Array("P5 1 1 255 ".utf8), to: "sparse.pgm")
        #expect(truncate(path, off_t(QRImageReader.maximumFileSize + 1)) == 0)  // sparse: no disk used
        #expect(throws: QRImageError.fileTooLarge(path: path, byteCount: QRImageReader.maximumFileSize + 1)) {
            try QRImageReader.decode(contentsOf: path)
        }
    }

    @Test func truncatedOrCorruptPNGIsRefused() throws {
        let png = try Self.chromeImage().pngBytes()
        let directory = try TemporaryDirectory()
        // After the signature, inside IHDR, at the start of and inside IDAT, and without IEND.
        for length in [8, 20, 33, 41, png.count / 2, png.count - 12, png.count - 1] {
            let path = try directory.write(Array(png.prefix(length)), to: "cut-\(length).png")
            #expect(throws: QRImageError.self, "\(length) bytes") { try QRImageReader.decode(contentsOf: path) }
            do {
                _ = try QRImageReader.decode(contentsOf: path)
            } catch {
                guard case .invalidPNG(path, let reason) = error else {
                    Issue.record("\(length) bytes: \(error)")
                    continue
                }
                #expect(!reason.isEmpty)
            }
        }
        var corrupt = png
        corrupt[29] ^= 0xFF  // the IHDR CRC
        #expect(throws: QRImageError.self) { try GrayImage(pngBytes: corrupt) }
        var flipped = png
        flipped[png.count / 2] ^= 0x55  // inside the compressed data
        #expect(throws: QRImageError.self) { try GrayImage(pngBytes: flipped) }
    }

    @Test func pngDimensionsAreCheckedBeforeAllocating() throws {
        for (width, height) in [(100_000, 100_000), (8193, 8193), (8192, 8193)] {
            let png = HandmadePNG.make(width: width, height: height, bitDepth: 8, colorType: 0, rows: [[0]])
            #expect(throws: QRImageError.imageTooLarge(width: width, height: height)) { try GrayImage(pngBytes: png) }
        }
        // At the limit: allocated, then refused because the pixel data is missing.
        let atLimit = HandmadePNG.make(width: 8192, height: 8192, bitDepth: 8, colorType: 0, rows: [[0]])
        #expect(throws: QRImageError.self) { try GrayImage(pngBytes: atLimit) }
        // libpng's own limit: a million rows or columns.
        let tall = HandmadePNG.make(width: 1, height: 1_000_001, bitDepth: 8, colorType: 0, rows: [[0]])
        #expect(throws: QRImageError.invalidPNG(path: nil, reason: "Invalid IHDR data")) {
            try GrayImage(pngBytes: tall)
        }
        let zero = HandmadePNG.make(width: 0, height: 1, bitDepth: 8, colorType: 0, rows: [[]])
        #expect(throws: QRImageError.invalidPNG(path: nil, reason: "Invalid IHDR data")) {
            try GrayImage(pngBytes: zero)
        }
        // libpng itself refuses dimensions above 2^31 - 1.
        let huge = HandmadePNG.make(width: 0xFFFF_FFFF, height: 1, bitDepth: 8, colorType: 0, rows: [[0]])
        #expect(throws: QRImageError.self) { try GrayImage(pngBytes: huge) }
    }

    @Test func anImageWithoutAQRCodeSaysSo() throws {
        let directory = try TemporaryDirectory()
        let blank = try directory.write(
            Self.pgmHeader("P5", 64, 48, 255) + [UInt8](repeating: 200, count: 64 * 48), to: "blank.pgm")
        #expect(throws: QRImageError.noQRCode(path: blank)) { try QRImageReader.decode(contentsOf: blank) }
        #expect(QRImageError.noQRCode(path: blank).description == "no QR code found in \(blank)")
        var random = SeededRandom(seed: 3)
        let noise = try GrayImage(width: 300, height: 200, pixels: random.bytes(60_000))
        let noisy = try directory.write(noise.pngBytes(), to: "noise.png")
        #expect(throws: QRImageError.noQRCode(path: noisy)) { try QRImageReader.decode(contentsOf: noisy) }
        #expect(try QRImageReader.decode(noise) == [])
    }

    @Test func anImageWithTwoQRCodesReturnsBoth() throws {
        let urls = try TestURLs.generated(count: 2, seed: 2024)
        let left = try QRMatrix(encoding: urls[0]).grayImage(moduleSize: 3)
        let right = try QRMatrix(encoding: urls[1], mode: .byte).grayImage(moduleSize: 3)
        let height = max(left.height, right.height)
        let width = left.width + right.width
        var pixels = [UInt8](repeating: 255, count: width * height)
        for row in 0..<height {
            if row < left.height {
                pixels.replaceSubrange(
                    row * width..<(row * width + left.width),
                    with: left.pixels[(row * left.width)..<((row + 1) * left.width)])
            }
            if row < right.height {
                let start = row * width + left.width
                pixels.replaceSubrange(
                    start..<(start + right.width), with: right.pixels[(row * right.width)..<((row + 1) * right.width)])
            }
        }
        let directory = try TemporaryDirectory()
        let path = try directory.write(
            GrayImage(width: width, height: height, pixels: pixels).pngBytes(), to: "two.png")
        #expect(Set(try QRImageReader.decode(contentsOf: path)) == Set(urls))
        #expect(try QRImageReader.decode(grayPixels: pixels, width: width, height: height).count == 2)
    }

    @Test func grayPixelsMustMatchTheirDimensions() {
        #expect(throws: QRImageError.pixelCountMismatch(expected: 6, actual: 5)) {
            try QRImageReader.decode(grayPixels: [0, 0, 0, 0, 0], width: 3, height: 2)
        }
        #expect(throws: QRImageError.imageEmpty(width: 0, height: 0)) {
            try QRImageReader.decode(grayPixels: [], width: 0, height: 0)
        }
        #expect(throws: QRImageError.imageTooLarge(width: Int.max, height: 2)) {
            try QRImageReader.decode(grayPixels: [], width: Int.max, height: 2)
        }
    }
}
