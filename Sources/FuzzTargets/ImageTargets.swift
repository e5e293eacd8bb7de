import QRImageIO

/// The image readers behind `passkey scan --image` and `inspect qr --image`: PNG through libpng, PGM by hand.
enum ImageTargets {
    /// Small images also go through zbar; large ones only through the reader, to keep runs fast.
    private static let scannedPixelLimit = 160 * 160

    private static func qrImage(moduleSize: Int) -> GrayImage? {
        try? QRMatrix(encoding: "FIDO:/1234567890123456789").grayImage(moduleSize: moduleSize, quietZone: 2)
    }

    private static func check(_ image: GrayImage) {
        expect(image.pixels.count == image.width * image.height, "pixels do not match the size")
        guard let png = try? image.pngBytes() else { return }
        expect((try? GrayImage(pngBytes: png)) == image, "an image did not survive a PNG round trip")
        if image.pixels.count <= scannedPixelLimit { _ = try? QRImageReader.decode(image) }
    }

    static let png: FuzzTarget = FuzzTarget(
        name: "png",
        summary: "PNG reading (libpng, with limits checked first): an accepted image re-encodes losslessly",
        seeds: {
            let images = [
                qrImage(moduleSize: 2), try? GrayImage(width: 3, height: 2, pixels: [0, 50, 100, 150, 200, 250]),
            ]
            return images.compactMap { try? $0?.pngBytes() }
        },
        run: { input in
            guard let image = try? GrayImage(pngBytes: input) else { return }
            check(image)
        })

    static let pgm: FuzzTarget = FuzzTarget(
        name: "pgm",
        summary: "PGM reading (P2 and P5, 8 and 16 bits): an accepted image re-encodes losslessly",
        seeds: {
            var seeds = [
                Array("P2\n# comment\n3 2\n255\n0 50 100\n150 200 255\n".utf8),
                Array("P5 2 1 65535\n".utf8) + [0xFF, 0xFF, 0x00, 0x01],
            ]
            if let image = qrImage(moduleSize: 2) {
                seeds.append(Array("P5\n\(image.width) \(image.height)\n255\n".utf8) + image.pixels)
            }
            return seeds
        },
        run: { input in
            guard let image = try? GrayImage(pgmBytes: input) else { return }
            check(image)
        })
}
