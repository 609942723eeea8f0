from tcpvideo.cli import main

main()
