# unimatch_v2.py, line 29
parser.add_argument('--local_rank', default=0, type=int)
# unimatch_v2.py, line 34
args = parser.parse_args()
